import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { newTenant, publishedType, useOwnerSession } from '../support/harness.js'
import { REVIEW_WORKFLOW } from '../fixtures/workflows.js'

const review = REVIEW_WORKFLOW

function keyed (body: Record<string, unknown> = {}) {
  return { key: `wf_${Math.random().toString(36).slice(2, 10)}`, ...review, ...body }
}

describe('workflows API', () => {
  const ctx = useOwnerSession()

  describe('POST /v1/workflows', () => {
    it('creates version 1 and normalises the definition', async () => {
      const res = await ctx.owner.post('/v1/workflows', keyed())
      assert.equal(res.status, 201, res.text)
      assert.equal(res.headers.get('location'), `/v1/workflows/${res.body.id}`)
      assert.equal(res.body.version, 1)
      assert.equal(res.body.initialState, 'draft')
      assert.deepEqual(res.body.states[0], { name: 'draft', final: false })
      assert.deepEqual(res.body.transitions[0].guards, [])
      assert.equal(res.body.transitions[2].from, '*')
    })

    it('answers 409 CONFLICT for a key already used in the tenant', async () => {
      const body = keyed()
      assert.equal((await ctx.owner.post('/v1/workflows', body)).status, 201)
      const again = await ctx.owner.post('/v1/workflows', body)
      assert.equal(again.status, 409)
      assert.equal(again.body.error.code, 'CONFLICT')
    })

    const invalid: Array<[string, Record<string, unknown>, string]> = [
      ['an initial state that is not a state', { initialState: 'nowhere' }, 'initialState'],
      ['a state declared twice', { states: [{ name: 'draft' }, { name: 'draft' }] }, 'states[1].name'],
      ['a transition to an unknown state', { transitions: [{ from: ['draft'], targetState: 'limbo' }] }, 'transitions[0].targetState'],
      ['a transition from an unknown state', { transitions: [{ from: ['draft', 'ghost'], targetState: 'review' }] }, 'transitions[0].from[1]'],
      ['a transition leaving a final state', { transitions: [{ from: ['approved'], targetState: 'draft' }] }, 'transitions[0].from[0]'],
      ['two transitions for one move', { transitions: [{ from: ['draft'], targetState: 'review' }, { from: '*', targetState: 'review' }] }, 'transitions[1]'],
      ['a permission guard without requiredRole', { transitions: [{ from: ['draft'], targetState: 'review', guards: [{ type: 'permission' }] }] }, 'transitions[0].guards[0].requiredRole'],
      ['a guard with a field of another type', { transitions: [{ from: ['draft'], targetState: 'review', guards: [{ type: 'permission', requiredRole: 'admin', operator: 'within' }] }] }, 'transitions[0].guards[0].operator'],
      ['an unknown JsonLogic operator', { transitions: [{ from: ['draft'], targetState: 'review', guards: [{ type: 'jsonlogic', rule: { and: [{ eval: 'x' }] } }] }] }, 'transitions[0].guards[0].rule.and[0].eval'],
      ['a spatial guard with an open ring', { transitions: [{ from: ['draft'], targetState: 'review', guards: [{ type: 'spatial', operator: 'within', geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] } }] }] }, 'transitions[0].guards[0].geometry.coordinates[0]'],
      ['dwithin without distanceMeters', { transitions: [{ from: ['draft'], targetState: 'review', guards: [{ type: 'spatial', operator: 'dwithin', geometry: { type: 'Point', coordinates: [0, 0] } }] }] }, 'transitions[0].guards[0].distanceMeters'],
      ['an unknown guard type', { transitions: [{ from: ['draft'], targetState: 'review', guards: [{ type: 'magic' }] }] }, 'transitions[0].guards[0].type'],
      ['a rule guard naming no rule of the tenant', { transitions: [{ from: ['draft'], targetState: 'review', guards: [{ type: 'rule', ruleId: '00000000-0000-4000-8000-000000000000' }] }] }, 'transitions[0].guards[0].ruleId'],
      ['the reserved state name "*"', { states: [{ name: 'draft' }, { name: '*' }] }, 'states[1].name']
    ]
    for (const [what, change, field] of invalid) {
      it(`answers 400 naming ${field} for ${what}`, async () => {
        const res = await ctx.owner.post('/v1/workflows', keyed(change))
        assert.equal(res.status, 400, res.text)
        assert.equal(res.body.error.code, 'VALIDATION_ERROR')
        assert.equal(res.body.error.details.field, field)
      })
    }

    it('answers 403 FORBIDDEN to an operator (workflows:write is for admins)', async () => {
      const res = await ctx.s.as(newTenant(), ['operator']).post('/v1/workflows', keyed())
      assert.equal(res.status, 403)
      assert.equal(res.body.error.code, 'FORBIDDEN')
    })
  })

  describe('GET /v1/workflows', () => {
    it('lists the tenant\'s workflows in the envelope and reads one', async () => {
      const c = ctx.s.as(newTenant(), ['admin'])
      const a = await c.post('/v1/workflows', keyed())
      await c.post('/v1/workflows', keyed())
      const list = await c.get('/v1/workflows?limit=1')
      assert.equal(list.status, 200)
      assert.equal(list.body.items.length, 1)
      assert.deepEqual(list.body.pagination, { limit: 1, offset: 0, total: 2, hasMore: true })
      assert.equal(list.body.items[0].id, a.body.id)
      const stranger = ctx.s.as(newTenant(), ['viewer'])
      assert.equal((await stranger.get(`/v1/workflows/${a.body.id}`)).status, 404, 'another tenant cannot see it')
      const got = await c.get(`/v1/workflows/${a.body.id}`)
      assert.equal(got.status, 200)
      assert.deepEqual(got.body, a.body)
    })
  })

  describe('PATCH /v1/workflows/:id', () => {
    it('makes a new version, effective at once, and keeps every version in the schema registry', async () => {
      const created = await ctx.owner.post('/v1/workflows', keyed())
      const id = created.body.id
      const patched = await ctx.owner.patch(`/v1/workflows/${id}`, { name: 'Review v2', initialState: 'review' })
      assert.equal(patched.status, 200, patched.text)
      assert.equal(patched.body.version, 2)
      assert.equal(patched.body.initialState, 'review')
      assert.deepEqual(patched.body.states, created.body.states)
      const reg = await ctx.owner.get(`/v1/schema-registry/workflows/${id}`)
      assert.equal(reg.status, 200)
      assert.equal(reg.body.entityType, 'workflows')
      assert.equal(reg.body.entityId, id)
      assert.deepEqual(reg.body.versions.map((v: any) => [v.version, v.status, v.definition.initialState]), [[1, 'published', 'draft'], [2, 'published', 'review']])
      assert.equal(reg.body.versions[1].publishedAt, reg.body.versions[1].createdAt)
      assert.equal(reg.body.versions[1].createdBy, 'user-1')
    })

    it('answers 409 VERSION_CONFLICT when If-Match is stale', async () => {
      const { body } = await ctx.owner.post('/v1/workflows', keyed())
      assert.equal((await ctx.owner.patch(`/v1/workflows/${body.id}`, { name: 'x' }, { 'If-Match': '"1"' })).status, 200)
      const stale = await ctx.owner.patch(`/v1/workflows/${body.id}`, { name: 'y' }, { 'If-Match': '"1"' })
      assert.equal(stale.status, 409)
      assert.equal(stale.body.error.code, 'VERSION_CONFLICT')
      assert.equal(stale.body.error.details.currentVersion, 2)
    })

    it('validates the merged definition and leaves the workflow unchanged on 400', async () => {
      const { body } = await ctx.owner.post('/v1/workflows', keyed())
      const res = await ctx.owner.patch(`/v1/workflows/${body.id}`, { states: [{ name: 'review' }, { name: 'approved' }] })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.details.field, 'initialState')
      assert.equal((await ctx.owner.get(`/v1/workflows/${body.id}`)).body.version, 1)
    })

    it('answers 404 for a workflow of another tenant', async () => {
      const { body } = await ctx.owner.post('/v1/workflows', keyed())
      const res = await ctx.s.as(newTenant(), ['owner']).patch(`/v1/workflows/${body.id}`, { name: 'x' })
      assert.equal(res.status, 404)
    })
  })

  describe('object types referencing workflows', () => {
    it('answers 400 on workflowId for a workflow that does not exist in the tenant', async () => {
      const other = await ctx.s.as(newTenant(), ['owner']).post('/v1/workflows', keyed())
      const res = await ctx.owner.post('/v1/object-types', { key: 'with_foreign_wf', name: 'x', workflowId: other.body.id })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.details.field, 'workflowId')
    })

    it('starts a new object in the initial state of the latest workflow version', async () => {
      const wf = await ctx.owner.post('/v1/workflows', keyed())
      const typeId = await publishedType(ctx.owner, { workflowId: wf.body.id })
      const a = await ctx.owner.post('/v1/objects', { typeId })
      assert.equal(a.status, 201, a.text)
      assert.equal(a.body.workflowState, 'draft')
      await ctx.owner.patch(`/v1/workflows/${wf.body.id}`, { initialState: 'review' })
      const b = await ctx.owner.post('/v1/objects', { typeId })
      assert.equal(b.body.workflowState, 'review')
    })
  })

  it('lists every new endpoint in the OpenAPI document', async () => {
    const doc = (await ctx.s.request('GET', '/openapi/v1.json')).body
    for (const [path, method] of [
      ['/v1/workflows', 'post'], ['/v1/workflows', 'get'], ['/v1/workflows/{id}', 'get'], ['/v1/workflows/{id}', 'patch'],
      ['/v1/objects/{id}/workflow/transitions', 'post'], ['/v1/objects/{id}/workflow/explain-transitions', 'get'],
      ['/v1/schema-registry/workflows/{id}', 'get'], ['/v1/rules', 'post'], ['/v1/rules', 'get'], ['/v1/rules/{id}', 'get'],
      ['/v1/rules/{id}', 'patch'], ['/v1/rules/{id}/publish', 'post'], ['/v1/schema-registry/rules/{id}', 'get']
    ]) {
      assert.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path} is documented`)
    }
    const guard = doc.paths['/v1/workflows'].post.requestBody.content['application/json'].schema.properties.transitions.items.properties.guards.items
    assert.deepEqual(guard.properties.type.enum, ['permission', 'jsonlogic', 'spatial', 'rule'])
  })
})
