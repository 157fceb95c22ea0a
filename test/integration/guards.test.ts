import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createDb, type Db } from '../../lib/db.js'
import * as workflows from '../../lib/workflows/index.js'
import * as rules from '../../lib/rules/index.js'
import * as objects from '../../lib/objects/index.js'
import * as objectTypes from '../../lib/object-types/index.js'
import { spatialTests } from '../../lib/workflows/sql.js'
import { isAppError } from '../../lib/errors.js'
import type { ServiceContext } from '../../lib/context.js'
import { newTenant, serviceContext } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'

type Geo = { type: string, coordinates: unknown } | null
const square = { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]] }
const point = (x: number, y: number) => ({ type: 'Point', coordinates: [x, y] })
const far = point(2, 2)
const inside = point(0.5, 0.5)

let db: Db
before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 5 }) })
after(() => db.destroy())

interface Scene { owner: ServiceContext, tenant: string, objectId: string, as: (roles: string[]) => ServiceContext }

/** A tenant with a workflow open -> done guarded by `guards`, a type using it and one object. */
async function scene (guards: unknown[], geometry: Geo, attributes: Record<string, unknown> = {}, tenant = newTenant('g')): Promise<Scene> {
  const owner = serviceContext(db, tenant, ['owner'])
  const wf = await workflows.createWorkflow(owner, {
    key: `wf_${randomUUID().slice(0, 8)}`, name: 'Guarded', initialState: 'open',
    states: [{ name: 'open' }, { name: 'done' }], transitions: [{ from: ['open'], targetState: 'done', guards }]
  })
  const type = await objectTypes.createObjectType(owner, { key: `t_${randomUUID().slice(0, 8)}`, name: 'Thing', workflowId: wf.id })
  await objectTypes.publishObjectType(owner, type.id, {})
  const o = await objects.createObject(owner, { typeId: type.id, attributes, geometry })
  return { owner, tenant, objectId: o.id, as: roles => serviceContext(db, tenant, roles) }
}

/** The guard results of the one transition, as explain shows them. */
async function explain (sc: Scene, ctx = sc.owner): Promise<workflows.GuardResult[]> {
  const e = await workflows.explainTransitions(ctx, sc.objectId)
  assert.equal(e.availableTransitions.length, 1)
  return e.availableTransitions[0].guards
}

async function refused (sc: Scene, ctx = sc.owner): Promise<Record<string, unknown>> {
  try {
    await workflows.transitionObject(ctx, sc.objectId, { targetState: 'done' }, null)
  } catch (err) {
    if (isAppError(err) && err.code === 'GUARD_FAILED') return err.details
    throw err
  }
  assert.fail('the transition was expected to be refused')
}

describe('permission guards', () => {
  it('pass for the role itself or a built-in role above it, and fail otherwise', async () => {
    const sc = await scene([{ type: 'permission', requiredRole: 'operator' }], null)
    assert.deepEqual(await explain(sc, sc.as(['operator'])), [{ type: 'permission', requiredRole: 'operator', evaluated: true, reason: 'you have role operator' }])
    assert.equal((await explain(sc, sc.as(['admin'])))[0].evaluated, true)
    assert.deepEqual(await explain(sc, sc.as(['viewer'])), [{ type: 'permission', requiredRole: 'operator', evaluated: false, reason: 'requires role operator; you have viewer' }])
  })

  it('treat a custom role as implied by no other role', async () => {
    const sc = await scene([{ type: 'permission', requiredRole: 'inspector' }], null)
    assert.equal((await explain(sc, sc.as(['operator', 'inspector'])))[0].evaluated, true)
    const [g] = await explain(sc, sc.as(['owner']))
    assert.deepEqual([g.evaluated, g.reason], [false, 'requires role inspector; you have owner'])
    const done = await workflows.transitionObject(sc.as(['operator', 'inspector']), sc.objectId, { targetState: 'done' }, null)
    assert.equal(done.workflowState, 'done')
  })
})

describe('jsonlogic guards', () => {
  const tall = { type: 'jsonlogic', rule: { '>=': [{ var: 'object.attributes.height' }, 2] }, message: 'height must be at least 2' }

  it('pass when the rule over {object, user, now} is truthy', async () => {
    const sc = await scene([tall, { type: 'jsonlogic', rule: { '==': [{ var: 'user.sub' }, 'tester'] } }, { type: 'jsonlogic', rule: { '<': [{ var: 'object.createdAt' }, { var: 'now' }] } }], null, { height: 3 })
    assert.deepEqual((await explain(sc)).map(g => [g.evaluated, g.reason]), [[true, 'the condition holds'], [true, 'the condition holds'], [true, 'the condition holds']])
    assert.equal((await workflows.transitionObject(sc.owner, sc.objectId, { targetState: 'done' }, null)).workflowState, 'done')
  })

  it('fail with the guard\'s message, or the rule itself when it has none', async () => {
    const sc = await scene([tall, { type: 'jsonlogic', rule: { '==': [{ var: 'object.attributes.color' }, 'red'] } }], null, { height: 1 })
    const details = await refused(sc)
    assert.deepEqual(details.guards, [
      { type: 'jsonlogic', evaluated: false, reason: 'height must be at least 2' },
      { type: 'jsonlogic', evaluated: false, reason: 'the condition {"==":[{"var":"object.attributes.color"},"red"]} is false for this object' }
    ])
  })

  it('fail closed when the rule throws', async () => {
    // json-logic-js throws for "*" without arguments (reduce of an empty array).
    const sc = await scene([{ type: 'jsonlogic', rule: { '>': [{ '*': [] }, 0] } }], null)
    const [g] = await explain(sc)
    assert.equal(g.evaluated, false)
    assert.match(g.reason, /^the condition could not be evaluated \(.+\); the guard fails closed$/)
  })
})

describe('spatial guards (PostGIS)', () => {
  const cases: Array<[string, Geo, Record<string, unknown>, boolean, string]> = [
    ['within: a point inside the square', inside, { operator: 'within', geometry: square }, true, "the object's geometry lies within the guard geometry"],
    ['within: a point outside the square', far, { operator: 'within', geometry: square }, false, "the object's geometry does not lie within the guard geometry"],
    ['intersects: a line crossing the square\'s edge', { type: 'LineString', coordinates: [[-1, 0.5], [0.5, 0.5]] }, { operator: 'intersects', geometry: square }, true, "the object's geometry intersects the guard geometry"],
    ['intersects: a far point', far, { operator: 'intersects', geometry: square }, false, "the object's geometry does not intersect the guard geometry"],
    ['contains: the square around a point', square, { operator: 'contains', geometry: inside }, true, "the object's geometry contains the guard geometry"],
    ['contains: a point cannot contain the square', inside, { operator: 'contains', geometry: square }, false, "the object's geometry does not contain the guard geometry"],
    ['disjoint: a far point', far, { operator: 'disjoint', geometry: square }, true, "the object's geometry is disjoint from the guard geometry"],
    ['disjoint: a point on the square\'s edge', point(1, 0.5), { operator: 'disjoint', geometry: square }, false, "the object's geometry touches or overlaps the guard geometry, so it is not disjoint"],
    // 0.01 degrees of longitude on the equator: 1111.95 m on the sphere (1113.19 m on the spheroid).
    ['dwithin: 1111.95 m on the sphere is within 1112 m', point(0, 0), { operator: 'dwithin', geometry: point(0.01, 0), distanceMeters: 1112 }, true, "the object's geometry is 1112.0 m from the guard geometry, within the 1112 m allowed"],
    ['dwithin: 1111.95 m is not within 1111 m', point(0, 0), { operator: 'dwithin', geometry: point(0.01, 0), distanceMeters: 1111 }, false, "the object's geometry is 1112.0 m from the guard geometry; it must be within 1111 m"]
  ]
  for (const [what, geometry, guard, evaluated, reason] of cases) {
    it(`${evaluated ? 'passes' : 'fails'} for ${what}`, async () => {
      const sc = await scene([{ type: 'spatial', ...guard }], geometry)
      assert.deepEqual(await explain(sc), [{ type: 'spatial', operator: guard.operator, evaluated, reason }])
    })
  }

  it('puts the guard\'s message first when it fails', async () => {
    const sc = await scene([{ type: 'spatial', operator: 'within', geometry: square, message: 'must be inside the service area' }], far)
    const details = await refused(sc)
    assert.equal((details.guards as workflows.GuardResult[])[0].reason, "must be inside the service area (the object's geometry does not lie within the guard geometry)")
  })

  it('fails closed for an object without geometry, and the transition is refused', async () => {
    const sc = await scene([{ type: 'spatial', operator: 'intersects', geometry: square }], null)
    const details = await refused(sc)
    assert.deepEqual(details.guards, [{ type: 'spatial', operator: 'intersects', evaluated: false, reason: 'the object has no geometry, so the spatial condition (intersects) cannot be checked; the guard fails closed' }])
  })

  it('isolates a condition PostGIS cannot evaluate: it fails closed, the others are still answered', async () => {
    const sc = await scene([], inside)
    const answers = await spatialTests(db, sc.tenant, sc.objectId, [
      { operator: 'within', geometry: { type: 'Polygonal', coordinates: [] } as never },
      { operator: 'within', geometry: square as never }
    ])
    assert.deepEqual(answers[0], { error: 'invalid GeoJson representation' })
    assert.deepEqual(answers[1], { passed: true })
  })
})

describe('rule guards', () => {
  async function rule (owner: ServiceContext, kind: 'jsonlogic' | 'spatial', definition: Record<string, unknown>, publish: boolean) {
    const r = await rules.createRule(owner, { key: `r_${randomUUID().slice(0, 8)}`, name: 'Reusable', kind, definition })
    return publish ? rules.publishRule(owner, r.id, {}) : r
  }

  it('evaluate the published version of a jsonlogic rule, not a newer draft', async () => {
    const tenant = newTenant('g')
    const owner = serviceContext(db, tenant, ['owner'])
    const r = await rule(owner, 'jsonlogic', { rule: { '>=': [{ var: 'object.attributes.height' }, 2] }, message: 'too short' }, true)
    await rules.patchRule(owner, r.id, { definition: { rule: { '>=': [{ var: 'object.attributes.height' }, 10] } } })
    const sc = await scene([{ type: 'rule', ruleId: r.id }], null, { height: 3 }, tenant)
    assert.deepEqual(await explain(sc), [{ type: 'rule', ruleId: r.id, evaluated: true, reason: `rule ${r.key} v1: the condition holds` }])
    await rules.publishRule(owner, r.id, {})
    assert.deepEqual(await explain(sc), [{ type: 'rule', ruleId: r.id, evaluated: false, reason: `rule ${r.key} v2: the condition {">=":[{"var":"object.attributes.height"},10]} is false for this object` }])
  })

  it('evaluate a published spatial rule in PostGIS', async () => {
    const tenant = newTenant('g')
    const owner = serviceContext(db, tenant, ['owner'])
    const r = await rule(owner, 'spatial', { operator: 'within', geometry: square, message: 'outside the area' }, true)
    const ok = await scene([{ type: 'rule', ruleId: r.id }], inside, {}, tenant)
    assert.equal((await explain(ok))[0].evaluated, true)
    const out = await scene([{ type: 'rule', ruleId: r.id }], far, {}, tenant)
    assert.equal((await explain(out))[0].reason, `rule ${r.key} v1: outside the area (the object's geometry does not lie within the guard geometry)`)
    const none = await scene([{ type: 'rule', ruleId: r.id }], null, {}, tenant)
    assert.equal((await explain(none))[0].evaluated, false)
  })

  it('fail closed, saying what to do, for a rule with no published version', async () => {
    const tenant = newTenant('g')
    const owner = serviceContext(db, tenant, ['owner'])
    const r = await rule(owner, 'jsonlogic', { rule: true }, false)
    const sc = await scene([{ type: 'rule', ruleId: r.id }], null, {}, tenant)
    const details = await refused(sc)
    assert.deepEqual(details.guards, [{ type: 'rule', ruleId: r.id, evaluated: false, reason: `rule ${r.key} has no published version (latest v1 is draft); publish it to use it in a guard` }])
  })

  it('resolve several rules of one transition together, each on its own status', async () => {
    const tenant = newTenant('g')
    const owner = serviceContext(db, tenant, ['owner'])
    const published = await rule(owner, 'spatial', { operator: 'dwithin', geometry: point(0, 0), distanceMeters: 2000 }, true)
    const draft = await rule(owner, 'jsonlogic', { rule: true }, false)
    const sc = await scene([{ type: 'rule', ruleId: published.id }, { type: 'rule', ruleId: draft.id }], point(0.01, 0), {}, tenant)
    assert.deepEqual((await explain(sc)).map(g => [g.ruleId, g.evaluated]), [[published.id, true], [draft.id, false]])
  })

  it('fail closed for a published rule that errors', async () => {
    const tenant = newTenant('g')
    const owner = serviceContext(db, tenant, ['owner'])
    const r = await rule(owner, 'jsonlogic', { rule: { '>': [{ '*': [] }, 0] } }, true)
    const sc = await scene([{ type: 'rule', ruleId: r.id }], null, {}, tenant)
    const [g] = await explain(sc)
    assert.equal(g.evaluated, false)
    assert.match(g.reason, new RegExp(`^rule ${r.key} v1: the condition could not be evaluated .*fails closed$`))
  })
})

describe('several guards on one transition', () => {
  it('are all evaluated and reported, and one failure blocks the move', async () => {
    const sc = await scene([
      { type: 'permission', requiredRole: 'operator' },
      { type: 'spatial', operator: 'within', geometry: square },
      { type: 'spatial', operator: 'dwithin', geometry: point(0.5, 0.5), distanceMeters: 10 }
    ], point(0.6, 0.5))
    const details = await refused(sc, sc.as(['operator']))
    assert.deepEqual((details.guards as workflows.GuardResult[]).map(g => g.evaluated), [true, true, false])
    const after = await objects.getObject(sc.owner, sc.objectId, {})
    assert.deepEqual([after.version, after.workflowState], [1, 'open'])
  })
})
