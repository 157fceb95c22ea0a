import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { publishedType, useOwnerSession } from '../support/harness.js'
import { createObject, errorOf, tenantCounts } from '../fixtures/objects.js'

const key = (p = 'life') => `${p}_${randomUUID().slice(0, 8)}`

describe('POST /v1/object-types/:id/publish', () => {
  const ctx = useOwnerSession()

  const draft = async (body: Record<string, unknown> = {}) => (await ctx.owner.post('/v1/object-types', { key: key(), name: 'T', ...body })).body.id as string
  const registry = async (id: string) => (await ctx.owner.get(`/v1/schema-registry/object-types/${id}`)).body.versions

  it('moves draft -> sandbox -> published, recording each step', async () => {
    const id = await draft()
    const sb = await ctx.owner.post(`/v1/object-types/${id}/publish`, { to: 'sandbox' })
    assert.equal(sb.status, 200, sb.text)
    assert.equal(sb.body.status, 'sandbox')
    assert.equal(sb.body.publishedVersion, null)
    const [v1] = await registry(id)
    assert.notEqual(v1.sandboxAt, null)
    assert.equal(v1.publishedAt, null)
    const pub = await ctx.owner.post(`/v1/object-types/${id}/publish`, { to: 'published' })
    assert.equal(pub.status, 200, pub.text)
    assert.equal(pub.body.status, 'published')
    assert.equal(pub.body.publishedVersion, 1)
    const [after] = await registry(id)
    assert.equal(after.sandboxAt, v1.sandboxAt, 'the sandbox step keeps its time')
    assert.ok(after.publishedAt >= after.sandboxAt)
  })

  it('goes from draft straight to published (the default), recording sandboxAt and publishedAt', async () => {
    const id = await draft()
    const res = await ctx.s.request('POST', `/v1/object-types/${id}/publish`, { token: ctx.owner.token })
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.status, 'published')
    const [v1] = await registry(id)
    assert.equal(v1.status, 'published')
    assert.notEqual(v1.sandboxAt, null)
    assert.notEqual(v1.publishedAt, null)
    const viaEmptyBody = await draft()
    assert.equal((await ctx.owner.post(`/v1/object-types/${viaEmptyBody}/publish`, {})).body.status, 'published')
  })

  it('answers 409 INVALID_TRANSITION to moving backwards, standing still or republishing', async () => {
    const id = await draft()
    await ctx.owner.post(`/v1/object-types/${id}/publish`, { to: 'sandbox' })
    const again = await ctx.owner.post(`/v1/object-types/${id}/publish`, { to: 'sandbox' })
    assert.equal(again.status, 409)
    assert.equal(errorOf(again).code, 'INVALID_TRANSITION')
    await ctx.owner.post(`/v1/object-types/${id}/publish`, { to: 'published' })
    for (const to of ['sandbox', 'published']) {
      const res = await ctx.owner.post(`/v1/object-types/${id}/publish`, { to })
      assert.equal(res.status, 409, to)
      assert.equal(errorOf(res).code, 'INVALID_TRANSITION')
    }
    assert.equal((await ctx.owner.get(`/v1/object-types/${id}`)).body.status, 'published')
  })

  it('answers 400 to an unknown target and 404 to an unknown type', async () => {
    const id = await draft()
    assert.equal((await ctx.owner.post(`/v1/object-types/${id}/publish`, { to: 'draft' })).status, 400)
    assert.equal((await ctx.owner.post(`/v1/object-types/${id}/publish`, { to: 'published', force: true })).status, 400)
    assert.equal((await ctx.owner.post(`/v1/object-types/${randomUUID()}/publish`, {})).status, 404)
  })
})

describe('PATCH /v1/object-types/:id', () => {
  const ctx = useOwnerSession()

  it('edits a draft in place: the version stays 1', async () => {
    const t = (await ctx.owner.post('/v1/object-types', { key: key(), name: 'Before', geometry: { required: true, types: ['Point'] } })).body
    const res = await ctx.owner.patch(`/v1/object-types/${t.id}`, { name: 'After', geometry: { types: ['Point', 'Polygon'] } })
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.version, 1)
    assert.equal(res.body.status, 'draft')
    assert.equal(res.body.name, 'After')
    assert.deepEqual(res.body.geometry, { required: true, types: ['Point', 'Polygon'], makeValid: false }, 'unnamed geometry fields are kept')
    assert.equal(res.body.key, t.key)
    const versions = (await ctx.owner.get(`/v1/schema-registry/object-types/${t.id}`)).body.versions
    assert.equal(versions.length, 1)
    assert.equal(versions[0].definition.name, 'After')
  })

  it('edits a sandbox version in place too', async () => {
    const t = (await ctx.owner.post('/v1/object-types', { key: key(), name: 'S' })).body
    await ctx.owner.post(`/v1/object-types/${t.id}/publish`, { to: 'sandbox' })
    const res = await ctx.owner.patch(`/v1/object-types/${t.id}`, { description: 'tested' })
    assert.equal(res.body.version, 1)
    assert.equal(res.body.status, 'sandbox')
    assert.equal(res.body.description, 'tested')
  })

  it('makes version 2 as draft over a published version; objects use version 1 until 2 is published', async () => {
    const id = await publishedType(ctx.owner, {
      attributeSchema: { type: 'object', properties: { height: { type: 'number' } } }
    })
    const keep = (await createObject(ctx.owner, { typeId: id, attributes: { height: 1 } })).body
    const v2 = await ctx.owner.patch(`/v1/object-types/${id}`, {
      attributeSchema: { type: 'object', required: ['label'], properties: { height: { type: 'string' }, label: { type: 'string' } } }
    })
    assert.equal(v2.status, 200, v2.text)
    assert.equal(v2.body.version, 2)
    assert.equal(v2.body.status, 'draft')
    assert.equal(v2.body.publishedVersion, 1)

    // Still version 1: numbers pass, the new shape fails.
    assert.equal((await ctx.owner.post('/v1/objects', { typeId: id, attributes: { height: 2 } })).status, 201)
    const newShape = await ctx.owner.post('/v1/objects', { typeId: id, attributes: { height: 'tall', label: 'x' } })
    assert.equal(newShape.status, 400)
    assert.equal(errorOf(newShape).details.field, 'attributes.height')

    // A second edit of the draft stays version 2.
    const again = await ctx.owner.patch(`/v1/object-types/${id}`, { name: 'Renamed' })
    assert.equal(again.body.version, 2)

    assert.equal((await ctx.owner.post(`/v1/object-types/${id}/publish`, {})).body.publishedVersion, 2)
    assert.equal((await ctx.owner.post('/v1/objects', { typeId: id, attributes: { height: 'tall', label: 'x' } })).status, 201)
    assert.equal((await ctx.owner.post('/v1/objects', { typeId: id, attributes: { height: 3 } })).status, 400)
    // Existing objects are validated against the new version on their next change.
    const p = await ctx.owner.patch(`/v1/objects/${keep.id}`, { attributes: { label: 'now required' } }, { 'If-Match': '1' })
    assert.equal(p.status, 400)
    assert.equal(errorOf(p).details.field, 'attributes.height')
    const fixed = await ctx.owner.patch(`/v1/objects/${keep.id}`, { attributes: { label: 'ok', height: 'one' } }, { 'If-Match': '1' })
    assert.equal(fixed.status, 200, fixed.text)
  })

  it('refuses invalid definitions, a changed key and an empty body, leaving the type as it was', async () => {
    const t = (await ctx.owner.post('/v1/object-types', { key: key(), name: 'Keep' })).body
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    for (const [body, field] of [
      [{ attributeSchema: { type: 'string' } }, 'attributeSchema.type'],
      [{ validationRules: [{ name: 'r', rule: { nope: [] }, message: 'm' }] }, 'validationRules[0].rule.nope'],
      [{ publicIdTemplate: '{{sequence}}' }, 'publicIdTemplate'],
      [{ key: 'renamed' }, 'key'],
      [{}, '(body)']
    ] as const) {
      const res = await ctx.owner.patch(`/v1/object-types/${t.id}`, body)
      assert.equal(res.status, 400, JSON.stringify(body))
      assert.equal(errorOf(res).details.field, field)
    }
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
    assert.deepEqual((await ctx.owner.get(`/v1/object-types/${t.id}`)).body, t)
  })

  it('answers 404 for unknown and non-UUID ids', async () => {
    assert.equal((await ctx.owner.patch(`/v1/object-types/${randomUUID()}`, { name: 'x' })).status, 404)
    assert.equal((await ctx.owner.patch('/v1/object-types/x', { name: 'x' })).status, 404)
  })
})

describe('POST /v1/object-types/:id/validate', () => {
  const ctx = useOwnerSession({
    type: {
      attributeSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
      geometry: { required: false, types: ['Point'] }
    }
  })
  before(async () => {
    await ctx.owner.patch(`/v1/object-types/${ctx.typeId}`, {
      attributeSchema: { type: 'object', required: ['code'], properties: { code: { type: 'integer' } } },
      validationRules: [{ name: 'positive', rule: { '>': [{ var: 'attributes.code' }, 0] }, message: 'code must be positive' }]
    })
  })

  it('validates against the latest version (the draft) by default', async () => {
    const ok = await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: { code: 5 } })
    assert.equal(ok.status, 200)
    assert.deepEqual(ok.body, { valid: true, version: 2, errors: [] })
    const bad = await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: { code: -1 }, geometry: { type: 'LineString', coordinates: [[0, 0], [1, 1]] } })
    assert.equal(bad.body.valid, false)
    assert.deepEqual(bad.body.errors.map((e: { field: string }) => e.field), ['geometry.type'])
    const rule = await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: { code: -1 } })
    assert.deepEqual(rule.body.errors, [{ field: 'validationRules.positive', reason: 'code must be positive' }])
  })

  it('validates against an explicit version', async () => {
    const v1ok = await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: { name: 'n' }, version: 1 })
    assert.deepEqual(v1ok.body, { valid: true, version: 1, errors: [] })
    const v1bad = await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: { code: 1 }, version: 1 })
    assert.equal(v1bad.body.valid, false)
    assert.deepEqual(v1bad.body.errors.map((e: { field: string }) => e.field), ['attributes.name'])
  })

  it('writes nothing', async () => {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: { code: 1 } })
    await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: {} })
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
  })

  it('answers 400 for a version that does not exist or a bad body, 404 for an unknown type', async () => {
    const missing = await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: {}, version: 9 })
    assert.equal(missing.status, 400)
    assert.equal(errorOf(missing).details.field, 'version')
    assert.equal((await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: [] })).status, 400)
    assert.equal((await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { workflowState: 'x' })).status, 400)
    assert.equal((await ctx.owner.post(`/v1/object-types/${randomUUID()}/validate`, {})).status, 404)
  })
})

describe('GET /v1/schema-registry/object-types/:id', () => {
  const ctx = useOwnerSession({ sub: 'designer-1' })

  it('lists every version with status, definition, createdAt, createdBy, sandboxAt and publishedAt', async () => {
    const id = await publishedType(ctx.owner, { name: 'V1' })
    await ctx.owner.patch(`/v1/object-types/${id}`, { name: 'V2' })
    await ctx.owner.post(`/v1/object-types/${id}/publish`, { to: 'sandbox' })
    const res = await ctx.owner.get(`/v1/schema-registry/object-types/${id}`)
    assert.equal(res.status, 200)
    assert.equal(res.body.entityType, 'object-types')
    assert.equal(res.body.entityId, id)
    const [v1, v2] = res.body.versions
    assert.equal(res.body.versions.length, 2)
    assert.deepEqual([v1.version, v1.status, v1.definition.name], [1, 'published', 'V1'])
    assert.deepEqual([v2.version, v2.status, v2.definition.name], [2, 'sandbox', 'V2'])
    for (const v of [v1, v2]) {
      assert.equal(v.createdBy, 'designer-1')
      assert.match(v.createdAt, /Z$/)
      assert.deepEqual(Object.keys(v.definition).sort(), ['attributeSchema', 'description', 'geometry', 'name', 'publicIdTemplate', 'validationRules', 'workflowId'])
    }
    assert.notEqual(v1.publishedAt, null)
    assert.notEqual(v2.sandboxAt, null)
    assert.equal(v2.publishedAt, null)
  })

  it('answers 404 for unknown and non-UUID ids', async () => {
    assert.equal((await ctx.owner.get(`/v1/schema-registry/object-types/${randomUUID()}`)).status, 404)
    assert.equal((await ctx.owner.get('/v1/schema-registry/object-types/nope')).status, 404)
  })
})

describe('DELETE /v1/object-types/:id', () => {
  const ctx = useOwnerSession()

  it('answers 409 while live objects exist, 204 once they are deleted, then 404; the key can be reused', async () => {
    const k = key('del')
    const id = await publishedType(ctx.owner, { key: k })
    const objs = [(await createObject(ctx.owner, { typeId: id })).body, (await createObject(ctx.owner, { typeId: id })).body]
    const busy = await ctx.owner.delete(`/v1/object-types/${id}`)
    assert.equal(busy.status, 409)
    assert.equal(errorOf(busy).code, 'CONFLICT')
    assert.equal(errorOf(busy).details.liveObjects, 2)
    for (const o of objs) assert.equal((await ctx.owner.delete(`/v1/objects/${o.id}`)).status, 204)
    assert.equal((await ctx.owner.delete(`/v1/object-types/${id}`)).status, 204)
    assert.equal((await ctx.owner.get(`/v1/object-types/${id}`)).status, 404)
    assert.equal((await ctx.owner.get(`/v1/schema-registry/object-types/${id}`)).status, 404)
    assert.equal((await ctx.owner.delete(`/v1/object-types/${id}`)).status, 404)
    assert.equal((await ctx.owner.get(`/v1/object-types?key=${k}`)).body.pagination.total, 0)
    const gone = await ctx.owner.post('/v1/objects', { typeId: id })
    assert.equal(gone.status, 400)
    assert.equal(errorOf(gone).details.field, 'typeId')
    const reused = await ctx.owner.post('/v1/object-types', { key: k, name: 'Again' })
    assert.equal(reused.status, 201, reused.text)
    assert.notEqual(reused.body.id, id)
    // The history of the deleted objects survives the type.
    assert.equal((await ctx.owner.get(`/v1/objects/${objs[0].id}/history`)).body.pagination.total, 2)
  })

  it('never leaves a live object of a deleted type when creates race the delete', async () => {
    for (let round = 0; round < 15; round++) {
      const id = await publishedType(ctx.owner)
      const [del, ...creates] = await Promise.all([
        ctx.owner.delete(`/v1/object-types/${id}`),
        ...Array.from({ length: 4 }, () => ctx.owner.post('/v1/objects', { typeId: id }))
      ])
      const created = creates.filter(r => r.status === 201).length
      assert.ok(creates.every(r => r.status === 201 || r.status === 400), creates.map(r => r.text).join())
      const live = await ctx.s.db.raw('SELECT count(*)::int AS n FROM objects WHERE type_id = ? AND deleted_at IS NULL', [id])
      assert.equal(live.rows[0].n, created)
      if (del.status === 204) assert.equal(created, 0, `round ${round}: type deleted while ${created} object(s) were created`)
      else assert.equal(del.status, 409, del.text)
    }
  })

  it('deletes a draft type that never had objects', async () => {
    const t = await ctx.owner.post('/v1/object-types', { key: key(), name: 'Draft' })
    assert.equal((await ctx.owner.delete(`/v1/object-types/${t.body.id}`)).status, 204)
  })

  it('answers 404 for unknown and non-UUID ids', async () => {
    assert.equal((await ctx.owner.delete(`/v1/object-types/${randomUUID()}`)).status, 404)
    assert.equal((await ctx.owner.delete('/v1/object-types/nope')).status, 404)
  })
})
