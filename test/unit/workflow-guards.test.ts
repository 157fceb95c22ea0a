import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { logicOutcome, noGeometryOutcome, permissionOutcome, resolveRule, spatialOutcome } from '../../lib/workflows/guards.js'

describe('permissionOutcome', () => {
  it('passes for the role held', () => {
    assert.deepEqual(permissionOutcome('operator', ['operator']), { evaluated: true, reason: 'you have role operator' })
  })
  it('passes for a built-in role above a built-in one', () => {
    assert.deepEqual(permissionOutcome('viewer', ['admin']), { evaluated: true, reason: 'you have role admin, which includes viewer' })
  })
  it('fails for a built-in role below, naming what the caller has', () => {
    assert.deepEqual(permissionOutcome('admin', ['operator', 'viewer']), { evaluated: false, reason: 'requires role admin; you have operator, viewer' })
  })
  it('fails for a token without roles', () => {
    assert.deepEqual(permissionOutcome('viewer', []), { evaluated: false, reason: 'requires role viewer; your token has no roles' })
  })
  it('never lets system_admin or a custom role stand in for a built-in role', () => {
    assert.equal(permissionOutcome('viewer', ['system_admin']).evaluated, false)
    assert.equal(permissionOutcome('viewer', ['inspector']).evaluated, false)
  })
})

describe('logicOutcome', () => {
  const data = { object: { attributes: { height: 3 } }, user: { sub: 'u', roles: [] }, now: '2026-01-01T00:00:00.000Z' }
  it('passes on a truthy result', () => {
    assert.equal(logicOutcome({ rule: { '>': [{ var: 'object.attributes.height' }, 2] } }, data).evaluated, true)
  })
  it('fails with the message when given', () => {
    assert.deepEqual(logicOutcome({ rule: { '>': [{ var: 'object.attributes.height' }, 5] }, message: 'too low' }, data), { evaluated: false, reason: 'too low' })
  })
  it('shortens a long rule in the reason', () => {
    const rule = { in: [{ var: 'object.attributes.height' }, Array.from({ length: 100 }, (_, i) => i + 10)] }
    const r = logicOutcome({ rule }, data)
    assert.equal(r.evaluated, false)
    assert.ok(r.reason.length < 260 && r.reason.includes('...'))
  })
  it('fails closed when evaluation throws', () => {
    const r = logicOutcome({ rule: { '*': [] } }, data)
    assert.equal(r.evaluated, false)
    assert.match(r.reason, /could not be evaluated.*fails closed/)
  })
})

describe('spatialOutcome', () => {
  const geometry = { type: 'Point' as const, coordinates: [0, 0] }
  it('reports the distance for dwithin', () => {
    assert.deepEqual(spatialOutcome({ operator: 'dwithin', geometry, distanceMeters: 50 }, { passed: false, distanceMeters: 67.91 }),
      { evaluated: false, reason: "the object's geometry is 67.9 m from the guard geometry; it must be within 50 m" })
  })
  it('fails closed on an error answer', () => {
    const r = spatialOutcome({ operator: 'within', geometry }, { error: 'boom' })
    assert.deepEqual(r, { evaluated: false, reason: 'the spatial condition could not be evaluated (boom); the guard fails closed' })
  })
  it('fails closed without an object geometry', () => {
    assert.equal(noGeometryOutcome('within').evaluated, false)
  })
})

describe('resolveRule', () => {
  it('fails closed for a rule that does not exist', () => {
    const r = resolveRule('x', undefined)
    assert.deepEqual(r.pending, { kind: 'done', outcome: { evaluated: false, reason: 'rule x does not exist; the guard fails closed' } })
  })
  it('uses the published content and names the version', () => {
    const r = resolveRule('x', {
      id: 'x', key: 'k', kind: 'jsonlogic', latest_version: 2, latest_status: 'draft', published_version: 1,
      published_content: { name: 'n', definition: { rule: true } }
    })
    assert.equal(r.prefix, 'rule k v1: ')
    assert.deepEqual(r.pending, { kind: 'logic', cond: { rule: true } })
  })
})
