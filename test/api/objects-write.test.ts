import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { publishedType, useOwnerSession } from '../support/harness.js'
import { createObject, errorOf, eventsFor, point, square, tenantCounts } from '../fixtures/objects.js'

const schema = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' }, height: { type: 'number' }, tags: { type: 'array' }, spec: { type: 'object' } }
}

describe('PATCH /v1/objects/:id', () => {
  const ctx = useOwnerSession({
    type: {
      attributeSchema: schema,
      validationRules: [{ name: 'lowEnough', rule: { '<=': [{ var: 'attributes.height' }, 100] }, message: 'height must be at most 100' }]
    }
  })
  let geoRequired: string
  before(async () => {
    geoRequired = await publishedType(ctx.owner, { geometry: { required: true, types: ['Point', 'Polygon'] } })
  })

  const make = async (attributes: Record<string, unknown> = { name: 'n', height: 1 }, t = ctx.typeId, geometry: unknown = null) =>
    (await createObject(ctx.owner, { typeId: t, attributes, geometry })).body

  /** A refused PATCH: the status and code, and nothing changed anywhere in the tenant. */
  async function refused (id: string, body: unknown, headers: Record<string, string>, status: number, code: string) {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const current = (await ctx.owner.get(`/v1/objects/${id}`)).body
    const res = await ctx.owner.patch(`/v1/objects/${id}`, body, headers)
    assert.equal(res.status, status, res.text)
    const e = errorOf(res)
    assert.equal(e.code, code)
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before, 'a refused PATCH leaves nothing behind')
    assert.deepEqual((await ctx.owner.get(`/v1/objects/${id}`)).body, current)
    return e
  }

  it('answers 400 PRECONDITION_REQUIRED without If-Match', async () => {
    const o = await make()
    const e = await refused(o.id, { attributes: { name: 'x' } }, {}, 400, 'PRECONDITION_REQUIRED')
    assert.equal(e.details.field, 'If-Match')
  })

  it('answers 400 BAD_REQUEST to an If-Match that is not a version', async () => {
    const o = await make()
    await refused(o.id, { attributes: { name: 'x' } }, { 'If-Match': '"abc"' }, 400, 'BAD_REQUEST')
  })

  it('answers 409 VERSION_CONFLICT with details.currentVersion when If-Match is stale', async () => {
    const o = await make()
    const p = await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'y' } }, { 'If-Match': '1' })
    assert.equal(p.status, 200)
    for (const stale of ['1', '"1"', '3', '"999"']) {
      const e = await refused(o.id, { attributes: { name: 'z' } }, { 'If-Match': stale }, 409, 'VERSION_CONFLICT')
      assert.equal(e.details.currentVersion, 2)
    }
  })

  it('accepts If-Match as 3, "3" and W/"3" and answers the new ETag', async () => {
    const o = await make()
    let version = 1
    for (const form of [(v: number) => `${v}`, (v: number) => `"${v}"`, (v: number) => `W/"${v}"`]) {
      const res = await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { height: version } }, { 'If-Match': form(version) })
      assert.equal(res.status, 200, res.text)
      version += 1
      assert.equal(res.body.version, version)
      assert.equal(res.headers.get('etag'), `"${version}"`)
    }
  })

  it('applies attributes as a JSON merge patch: null removes, objects merge, arrays replace', async () => {
    const o = await make({ name: 'n', height: 4, tags: ['a', 'b'], spec: { dn: 100, material: 'pe', depth: { min: 1, max: 2 } } })
    const res = await ctx.owner.patch(`/v1/objects/${o.id}`, {
      attributes: { height: null, tags: ['c'], spec: { material: null, depth: { max: 3 }, coating: 'zinc' }, colour: 'red' }
    }, { 'If-Match': '1' })
    assert.equal(res.status, 200, res.text)
    assert.deepEqual(res.body.attributes, { name: 'n', tags: ['c'], spec: { dn: 100, depth: { min: 1, max: 3 }, coating: 'zinc' }, colour: 'red' })
    assert.deepEqual((await ctx.owner.get(`/v1/objects/${o.id}`)).body.attributes, res.body.attributes)
  })

  it('reads a body sent as application/merge-patch+json, or any other +json type, as it reads application/json', async () => {
    const o = await make({ name: 'n', height: 4 })
    const merge = { 'If-Match': '1', 'Content-Type': 'application/merge-patch+json' }
    const res = await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { height: null, colour: 'red' } }, merge)
    assert.equal(res.status, 200, res.text)
    assert.deepEqual(res.body.attributes, { name: 'n', colour: 'red' })
    const vendor = await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'v' } }, { 'If-Match': '2', 'Content-Type': 'application/vnd.example+json; charset=utf-8' })
    assert.equal(vendor.status, 200, vendor.text)
    assert.equal(vendor.body.version, 3)
    // The same checks as application/json: malformed JSON and a body that is not an object.
    const malformed = await ctx.s.request('PATCH', `/v1/objects/${o.id}`, { token: ctx.owner.token, raw: '{"attributes": ', headers: { ...merge, 'If-Match': '3' } })
    assert.equal(malformed.status, 400, malformed.text)
    assert.equal(errorOf(malformed).code, 'BAD_REQUEST')
    await refused(o.id, ['attributes'], { ...merge, 'If-Match': '3' }, 400, 'VALIDATION_ERROR')
  })

  it('keeps the geometry when it is omitted, replaces it when given, clears it with null', async () => {
    const o = await make({ name: 'g' }, ctx.typeId, point(1, 1))
    const kept = await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { height: 2 } }, { 'If-Match': '1' })
    assert.deepEqual(kept.body.geometry, point(1, 1))
    const replaced = await ctx.owner.patch(`/v1/objects/${o.id}`, { geometry: square() }, { 'If-Match': '2' })
    assert.deepEqual(replaced.body.geometry, square())
    assert.deepEqual(replaced.body.attributes, { name: 'g', height: 2 })
    const cleared = await ctx.owner.patch(`/v1/objects/${o.id}`, { geometry: null }, { 'If-Match': '3' })
    assert.equal(cleared.status, 200, cleared.text)
    assert.equal(cleared.body.geometry, null)
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}`)).body.geometry, null)
  })

  it('refuses to clear the geometry of a type that requires one, and refuses a disallowed or invalid one', async () => {
    const o = await make({}, geoRequired, point())
    assert.equal((await refused(o.id, { geometry: null }, { 'If-Match': '1' }, 400, 'VALIDATION_ERROR')).details.field, 'geometry')
    assert.equal((await refused(o.id, { geometry: { type: 'LineString', coordinates: [[0, 0], [1, 1]] } }, { 'If-Match': '1' }, 400, 'VALIDATION_ERROR')).details.field, 'geometry.type')
    assert.equal((await refused(o.id, { geometry: point(0, 95) }, { 'If-Match': '1' }, 400, 'VALIDATION_ERROR')).details.field, 'geometry.coordinates[1]')
  })

  it('validates the merged result, not only the patch', async () => {
    const o = await make({ name: 'n', height: 90 })
    assert.equal((await refused(o.id, { attributes: { name: null } }, { 'If-Match': '1' }, 400, 'VALIDATION_ERROR')).details.field, 'attributes.name')
    assert.equal((await refused(o.id, { attributes: { height: 'tall' } }, { 'If-Match': '1' }, 400, 'VALIDATION_ERROR')).details.field, 'attributes.height')
    const rule = await refused(o.id, { attributes: { height: 101 } }, { 'If-Match': '1' }, 400, 'VALIDATION_ERROR')
    assert.equal(rule.details.reason, 'height must be at most 100')
    // A geometry-only change is still checked against the (unchanged) attributes and rules.
    const ok = await ctx.owner.patch(`/v1/objects/${o.id}`, { geometry: point() }, { 'If-Match': '1' })
    assert.equal(ok.status, 200, ok.text)
  })

  it('refuses a merge patch nested absurdly deep with 400 (never 500)', async () => {
    const o = await make()
    for (const depth of [65, 100_000]) {
      const before = await tenantCounts(ctx.s.db, ctx.tenant)
      const raw = `{"attributes":{"spec":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}}`
      const res = await ctx.s.request('PATCH', `/v1/objects/${o.id}`, { token: ctx.owner.token, raw, headers: { 'Content-Type': 'application/json', 'If-Match': '1' } })
      assert.equal(res.status, 400, `${depth}: ${res.text.slice(0, 200)}`)
      assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
    }
  })

  it('refuses an empty body, workflowState, typeId and unknown fields', async () => {
    const o = await make()
    for (const body of [{}, { workflowState: 'done' }, { typeId: geoRequired }, { attributes: { name: 'x' }, version: 2 }, { attributes: 'x' }]) {
      await refused(o.id, body, { 'If-Match': '1' }, 400, 'VALIDATION_ERROR')
    }
  })

  it('refuses a validFrom earlier than the current version\'s, accepts an equal or later one', async () => {
    const res = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, attributes: { name: 'v' }, validFrom: '2022-01-01T00:00:00.000Z' })
    const id = res.body.id
    const e = await refused(id, { attributes: { height: 1 }, validFrom: '2021-12-31T23:59:59.999Z' }, { 'If-Match': '1' }, 400, 'VALIDATION_ERROR')
    assert.equal(e.details.field, 'validFrom')
    const same = await ctx.owner.patch(`/v1/objects/${id}`, { attributes: { height: 1 }, validFrom: '2022-01-01T00:00:00.000Z' }, { 'If-Match': '1' })
    assert.equal(same.status, 200, same.text)
    const later = await ctx.owner.patch(`/v1/objects/${id}`, { attributes: { height: 2 }, validFrom: '2023-01-01T00:00:00.000Z' }, { 'If-Match': '2' })
    assert.equal(later.status, 200, later.text)
    assert.equal(later.body.validFrom, '2023-01-01T00:00:00.000Z')
  })

  it('answers 404 for an unknown, non-UUID or deleted object', async () => {
    assert.equal((await ctx.owner.patch(`/v1/objects/${randomUUID()}`, { attributes: { name: 'x' } }, { 'If-Match': '1' })).status, 404)
    assert.equal((await ctx.owner.patch('/v1/objects/nope', { attributes: { name: 'x' } }, { 'If-Match': '1' })).status, 404)
    const o = await make()
    assert.equal((await ctx.owner.delete(`/v1/objects/${o.id}`)).status, 204)
    assert.equal((await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'x' } }, { 'If-Match': '2' })).status, 404)
  })

  it('keeps createdAt and moves updatedAt', async () => {
    const o = await make()
    const p = await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { height: 9 } }, { 'If-Match': '1' })
    assert.equal(p.body.createdAt, o.createdAt)
    assert.ok(p.body.updatedAt >= o.updatedAt)
    assert.equal(p.body.publicId, o.publicId)
    assert.equal(p.body.id, o.id)
  })
})

describe('concurrent PATCHes of one object', () => {
  const ctx = useOwnerSession({ type: true })

  it('lets exactly one of two PATCHes with the same If-Match win, without a lost update', async () => {
    for (let round = 0; round < 5; round++) {
      const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'base', height: 1 } })).body
      const [a, b] = await Promise.all([
        ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'from-a' } }, { 'If-Match': '"1"' }),
        ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { height: 2 } }, { 'If-Match': '"1"' })
      ])
      assert.deepEqual([a.status, b.status].sort(), [200, 409], `${a.text} ${b.text}`)
      const [winner, loser] = a.status === 200 ? [a, b] : [b, a]
      assert.equal(errorOf(loser).code, 'VERSION_CONFLICT')
      assert.equal(errorOf(loser).details.currentVersion, 2)
      const expected = winner === a ? { name: 'from-a', height: 1 } : { name: 'base', height: 2 }
      const now = await ctx.owner.get(`/v1/objects/${o.id}`)
      assert.deepEqual(now.body.attributes, expected)
      assert.equal(now.body.version, 2)
      const history = await ctx.owner.get(`/v1/objects/${o.id}/history`)
      assert.equal(history.body.pagination.total, 2)
      assert.deepEqual(history.body.items[1].object.attributes, expected)
    }
  })

  it('lets exactly one of ten racing PATCHes win', async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'race' } })).body
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { height: i } }, { 'If-Match': '1' })))
    const won = results.filter(r => r.status === 200)
    assert.equal(won.length, 1)
    assert.equal(results.filter(r => r.status === 409).length, 9)
    const now = (await ctx.owner.get(`/v1/objects/${o.id}`)).body
    assert.equal(now.attributes.height, won[0].body.attributes.height)
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}/history`)).body.pagination.total, 2)
  })
})

describe('DELETE /v1/objects/:id', () => {
  const ctx = useOwnerSession({ type: true })

  it('answers 204; then GET gives 404 and the list no longer has it', async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'd' } })).body
    const res = await ctx.owner.delete(`/v1/objects/${o.id}`)
    assert.equal(res.status, 204)
    assert.equal(res.text, '')
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}`)).status, 404)
    const list = await ctx.owner.get(`/v1/objects?typeId=${ctx.typeId}`)
    assert.ok(!list.body.items.some((x: { id: string }) => x.id === o.id))
  })

  it('keeps the history, ending in a deleted version, and asOf before the delete still finds it', async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'h' } })).body
    await ctx.owner.delete(`/v1/objects/${o.id}`)
    const h = await ctx.owner.get(`/v1/objects/${o.id}/history`)
    assert.equal(h.status, 200)
    assert.deepEqual(h.body.items.map((v: { operation: string }) => v.operation), ['created', 'deleted'])
    const del = h.body.items[1]
    assert.equal(del.version, 2)
    assert.equal(del.txTo, null)
    const before = await ctx.owner.get(`/v1/objects/${o.id}?asOf=${encodeURIComponent(o.createdAt)}`)
    assert.equal(before.status, 200)
    assert.deepEqual(before.body.attributes, { name: 'h' })
    assert.equal(before.body.version, 1)
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}?asOf=${encodeURIComponent(del.txFrom)}`)).status, 404)
  })

  it('answers 409 to a stale If-Match and 204 to the current one', async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 's' } })).body
    await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { height: 1 } }, { 'If-Match': '1' })
    const stale = await ctx.owner.delete(`/v1/objects/${o.id}`, { 'If-Match': '"1"' })
    assert.equal(stale.status, 409)
    assert.equal(errorOf(stale).details.currentVersion, 2)
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}`)).status, 200)
    assert.equal((await ctx.owner.delete(`/v1/objects/${o.id}`, { 'If-Match': 'W/"2"' })).status, 204)
  })

  it('answers 404 to a second delete and to unknown or non-UUID ids', async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 't' } })).body
    assert.equal((await ctx.owner.delete(`/v1/objects/${o.id}`)).status, 204)
    assert.equal((await ctx.owner.delete(`/v1/objects/${o.id}`)).status, 404)
    assert.equal((await ctx.owner.delete(`/v1/objects/${randomUUID()}`)).status, 404)
    assert.equal((await ctx.owner.delete('/v1/objects/abc')).status, 404)
  })

  it('answers 403 to a viewer and leaves the object alone', async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'v' } })).body
    const res = await ctx.s.as(ctx.tenant, ['viewer']).delete(`/v1/objects/${o.id}`)
    assert.equal(res.status, 403)
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}`)).status, 200)
  })
})

describe('audit and outbox of object writes', () => {
  const ctx = useOwnerSession({ sub: 'auditor-1', type: true })

  it('writes exactly one audit event and one outbox event per successful write, in the tenant', async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'a' } })).body
    assert.deepEqual(await eventsFor(ctx.s.db, ctx.tenant, o.id), { audit: ['object.created'], outbox: ['object.created'] })
    await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'b' } }, { 'If-Match': '1' })
    await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'c' } }, { 'If-Match': '1' }) // stale: 409, nothing recorded
    await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 5 } }, { 'If-Match': '2' }) // invalid: 400, nothing recorded
    await ctx.owner.delete(`/v1/objects/${o.id}`)
    assert.deepEqual(await eventsFor(ctx.s.db, ctx.tenant, o.id), {
      audit: ['object.created', 'object.updated', 'object.deleted'],
      outbox: ['object.created', 'object.updated', 'object.deleted']
    })
    const other = await ctx.s.db.raw('SELECT count(*)::int AS n FROM audit_events WHERE resource_id = ? AND tenant_id <> ?', [o.id, ctx.tenant])
    assert.equal(other.rows[0].n, 0)
  })

  it('records the actor and the new state in the events', async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'x' } })).body
    await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'y' } }, { 'If-Match': '1' })
    const audit = await ctx.s.db.raw("SELECT actor, data FROM audit_events WHERE tenant_id = ? AND resource_id = ? AND type = 'object.updated'", [ctx.tenant, o.id])
    assert.equal(audit.rows[0].actor.sub, 'auditor-1')
    assert.equal(audit.rows[0].data.version, 2)
    const outbox = await ctx.s.db.raw("SELECT payload FROM outbox_events WHERE tenant_id = ? AND aggregate_id = ? AND type = 'object.updated'", [ctx.tenant, o.id])
    assert.equal(outbox.rows[0].payload.object.version, 2)
    assert.deepEqual(outbox.rows[0].payload.object.attributes, { name: 'y' })
    assert.deepEqual(outbox.rows[0].payload.previous.attributes, { name: 'x' })
  })
})
