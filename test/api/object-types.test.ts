import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { newTenant, publishedType, useOwnerSession } from '../support/harness.js'
import { errorOf, tenantCounts } from '../fixtures/objects.js'

const key = (p = 'type') => `${p}_${randomUUID().slice(0, 8)}`

describe('POST /v1/object-types', () => {
  const ctx = useOwnerSession()

  async function refused (body: Record<string, unknown>, field: string) {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const res = await ctx.owner.post('/v1/object-types', { key: key(), name: 'T', ...body })
    assert.equal(res.status, 400, res.text)
    const e = errorOf(res)
    assert.equal(e.code, 'VALIDATION_ERROR')
    assert.equal(e.details.field, field, res.text)
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before, 'a refused create leaves nothing behind')
    return e
  }

  it('answers 201 with version 1 as draft and every field of the type', async () => {
    const k = key('pipe')
    const res = await ctx.owner.post('/v1/object-types', {
      key: k,
      name: 'Pipe',
      description: 'Water pipes',
      attributeSchema: { type: 'object', properties: { dn: { type: 'integer' } } },
      geometry: { required: true, types: ['LineString'] },
      validationRules: [{ name: 'dn', rule: { '>': [{ var: 'attributes.dn' }, 0] }, message: 'dn must be positive' }],
      publicIdTemplate: 'PIPE-{{seq:5}}'
    })
    assert.equal(res.status, 201, res.text)
    const t = res.body
    assert.equal(res.headers.get('location'), `/v1/object-types/${t.id}`)
    assert.match(t.id, /^[0-9a-f-]{36}$/)
    assert.equal(t.key, k)
    assert.equal(t.name, 'Pipe')
    assert.equal(t.description, 'Water pipes')
    assert.deepEqual(t.attributeSchema, { type: 'object', properties: { dn: { type: 'integer' } } })
    assert.deepEqual(t.geometry, { required: true, types: ['LineString'], makeValid: false })
    assert.equal(t.validationRules.length, 1)
    assert.equal(t.workflowId, null)
    assert.equal(t.publicIdTemplate, 'PIPE-{{seq:5}}')
    assert.equal(t.version, 1)
    assert.equal(t.status, 'draft')
    assert.equal(t.publishedVersion, null)
    assert.match(t.createdAt, /Z$/)
    assert.deepEqual((await ctx.owner.get(`/v1/object-types/${t.id}`)).body, t)
  })

  it('fills defaults for a minimal type', async () => {
    const res = await ctx.owner.post('/v1/object-types', { key: key(), name: 'Minimal' })
    assert.equal(res.status, 201)
    assert.equal(res.body.attributeSchema, null)
    assert.deepEqual(res.body.geometry, { required: false, types: [], makeValid: false })
    assert.deepEqual(res.body.validationRules, [])
    assert.equal(res.body.description, null)
  })

  it('answers 409 CONFLICT to a duplicate key in the tenant; the same key in another tenant is fine', async () => {
    const k = key('dup')
    assert.equal((await ctx.owner.post('/v1/object-types', { key: k, name: 'One' })).status, 201)
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const dup = await ctx.owner.post('/v1/object-types', { key: k, name: 'Two' })
    assert.equal(dup.status, 409, dup.text)
    assert.equal(errorOf(dup).code, 'CONFLICT')
    assert.equal(errorOf(dup).details.field, 'key', 'the 409 names the field that clashed')
    assert.match(errorOf(dup).message, new RegExp(`key "${k}" is already taken`))
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
    assert.equal((await ctx.s.as(newTenant(), ['admin']).post('/v1/object-types', { key: k, name: 'Elsewhere' })).status, 201)
  })

  it('refuses an attributeSchema that is not of type object or does not compile', async () => {
    await refused({ attributeSchema: { type: 'array', items: {} } }, 'attributeSchema.type')
    await refused({ attributeSchema: { properties: { a: { type: 'string' } } } }, 'attributeSchema.type')
    const e = await refused({ attributeSchema: { type: 'object', properties: { a: { type: 'text' } } } }, 'attributeSchema')
    assert.match(e.details.reason, /not a valid JSON Schema/)
    await refused({ attributeSchema: { type: 'object', required: 'a' } }, 'attributeSchema')
    await refused({ attributeSchema: 'object' }, 'attributeSchema')
  })

  it('refuses a definition nested absurdly deep with 400 (never 500)', async () => {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const depth = 3000
    const raw = `{"key":"${key()}","name":"deep","attributeSchema":{"type":"object","properties":${'{"a":{"type":"object","properties":'.repeat(depth)}{}${'}}'.repeat(depth)}}}`
    const res = await ctx.s.request('POST', '/v1/object-types', { token: ctx.owner.token, raw, headers: { 'Content-Type': 'application/json' } })
    assert.equal(res.status, 400, res.text.slice(0, 200))
    assert.match(errorOf(res).details.reason, /deeper than/)
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
  })

  it('lets two types share a schema $id', async () => {
    const schema = { $id: 'https://example.com/schemas/asset', type: 'object', properties: { a: { type: 'string' } } }
    assert.equal((await ctx.owner.post('/v1/object-types', { key: key(), name: 'A', attributeSchema: schema })).status, 201)
    assert.equal((await ctx.owner.post('/v1/object-types', { key: key(), name: 'B', attributeSchema: schema })).status, 201)
    assert.equal((await ctx.s.as(newTenant(), ['admin']).post('/v1/object-types', { key: key(), name: 'C', attributeSchema: schema })).status, 201)
  })

  it('refuses a validation rule with an unknown JsonLogic operator, naming the path', async () => {
    const e = await refused({
      validationRules: [
        { name: 'fine', rule: { '==': [1, 1] }, message: 'm' },
        { name: 'broken', rule: { or: [{ var: 'attributes.a' }, { eval: 'x' }] }, message: 'm' }
      ]
    }, 'validationRules[1].rule.or[1].eval')
    assert.match(e.details.reason, /unknown JsonLogic operator "eval"/)
    await refused({ validationRules: [{ name: 'nomsg', rule: { '==': [1, 1] } }] }, 'validationRules[0].message')
  })

  it('refuses an unknown publicId token', async () => {
    const e = await refused({ publicIdTemplate: 'X-{{uuid}}' }, 'publicIdTemplate')
    assert.match(e.details.reason, /\{\{uuid\}\}/)
  })

  it('refuses a workflowId that names no workflow of the tenant', async () => {
    await refused({ workflowId: randomUUID() }, 'workflowId')
  })

  it('refuses bad keys, missing names, unknown geometry types and unknown fields', async () => {
    await refused({ key: 'Has Spaces' }, 'key')
    await refused({ key: '1starts-with-digit' }, 'key')
    await refused({ name: '' }, 'name')
    await refused({ geometry: { types: ['Circle'] } }, 'geometry.types[0]')
    await refused({ status: 'published' }, 'status')
    await refused({ name: 'nul\u0000name' }, 'name')
    await refused({ attributeSchema: { type: 'object', properties: { 'a\u0000': { type: 'string' } } } }, 'attributeSchema.properties')
    const res = await ctx.owner.post('/v1/object-types', { name: 'no key' })
    assert.equal(errorOf(res).details.field, 'key')
  })
})

describe('GET /v1/object-types', () => {
  const ctx = useOwnerSession()
  let draft: string
  let sandbox: string
  let published: string
  const keys: string[] = []
  before(async () => {
    for (let i = 0; i < 3; i++) keys.push(key(`list${i}`))
    draft = (await ctx.owner.post('/v1/object-types', { key: keys[0], name: 'Draft' })).body.id
    sandbox = (await ctx.owner.post('/v1/object-types', { key: keys[1], name: 'Sandbox' })).body.id
    await ctx.owner.post(`/v1/object-types/${sandbox}/publish`, { to: 'sandbox' })
    published = await publishedType(ctx.owner, { key: keys[2] })
  })

  it('lists the tenant\'s types in the envelope, oldest first', async () => {
    const res = await ctx.owner.get('/v1/object-types')
    assert.equal(res.status, 200)
    assert.deepEqual(res.body.pagination, { limit: 100, offset: 0, total: 3, hasMore: false })
    assert.deepEqual(res.body.items.map((t: { id: string }) => t.id), [draft, sandbox, published])
    const page = await ctx.owner.get('/v1/object-types?limit=2&offset=1')
    assert.deepEqual(page.body.pagination, { limit: 2, offset: 1, total: 3, hasMore: false })
    assert.deepEqual(page.body.items.map((t: { id: string }) => t.id), [sandbox, published])
  })

  it('filters by the status of the latest version and by key', async () => {
    for (const [status, id] of [['draft', draft], ['sandbox', sandbox], ['published', published]]) {
      const res = await ctx.owner.get(`/v1/object-types?status=${status}`)
      assert.deepEqual(res.body.items.map((t: { id: string }) => t.id), [id], status)
      assert.equal(res.body.pagination.total, 1)
    }
    const byKey = await ctx.owner.get(`/v1/object-types?key=${keys[1]}`)
    assert.deepEqual(byKey.body.items.map((t: { id: string }) => t.id), [sandbox])
    assert.equal((await ctx.owner.get('/v1/object-types?key=nothing_here')).body.pagination.total, 0)
  })

  it('answers 400 to a bad status, limit or unknown parameter', async () => {
    for (const q of ['status=live', 'limit=0', 'limit=1001', 'offset=-1', 'sortBy=key']) {
      assert.equal((await ctx.owner.get(`/v1/object-types?${q}`)).status, 400, q)
    }
  })

  it('answers 404 for unknown, non-UUID and foreign types', async () => {
    assert.equal((await ctx.owner.get(`/v1/object-types/${randomUUID()}`)).status, 404)
    assert.equal((await ctx.owner.get('/v1/object-types/pipe')).status, 404)
    const other = ctx.s.as(newTenant(), ['owner'])
    assert.equal((await other.get(`/v1/object-types/${published}`)).status, 404)
    assert.equal((await other.get('/v1/object-types')).body.pagination.total, 0)
  })
})

describe('object type permissions and tenancy', () => {
  const ctx = useOwnerSession({ type: true })
  let draftId: string
  before(async () => {
    draftId = (await ctx.owner.post('/v1/object-types', { key: key(), name: 'D' })).body.id
  })

  for (const role of ['viewer', 'operator']) {
    it(`answers 403 FORBIDDEN to a ${role} on every write`, async () => {
      const c = ctx.s.as(ctx.tenant, [role])
      const before = await tenantCounts(ctx.s.db, ctx.tenant)
      const writes = [
        await c.post('/v1/object-types', { key: key(), name: 'X' }),
        await c.patch(`/v1/object-types/${draftId}`, { name: 'Y' }),
        await c.post(`/v1/object-types/${draftId}/publish`, { to: 'published' }),
        await c.delete(`/v1/object-types/${draftId}`)
      ]
      for (const res of writes) {
        assert.equal(res.status, 403, res.text)
        assert.equal(errorOf(res).code, 'FORBIDDEN')
      }
      const after = await tenantCounts(ctx.s.db, ctx.tenant)
      assert.deepEqual({ ...after, audit: 0 }, { ...before, audit: 0 }, 'only permission.denied audit events were written')
      assert.equal((await ctx.owner.get(`/v1/object-types/${draftId}`)).body.status, 'draft')
    })
  }

  it('lets a viewer read, list, dry-run validate and read the schema registry', async () => {
    const v = ctx.s.as(ctx.tenant, ['viewer'])
    assert.equal((await v.get(`/v1/object-types/${ctx.typeId}`)).status, 200)
    assert.equal((await v.get('/v1/object-types')).body.pagination.total, 2)
    assert.equal((await v.post(`/v1/object-types/${ctx.typeId}/validate`, { attributes: {} })).status, 200)
    assert.equal((await v.get(`/v1/schema-registry/object-types/${ctx.typeId}`)).status, 200)
  })

  it('lets an admin write', async () => {
    const admin = ctx.s.as(ctx.tenant, ['admin'])
    const res = await admin.post('/v1/object-types', { key: key(), name: 'By admin' })
    assert.equal(res.status, 201)
    assert.equal((await admin.post(`/v1/object-types/${res.body.id}/publish`, {})).status, 200)
  })

  it("gives another tenant 404 on every operation on this tenant's type", async () => {
    const other = ctx.s.as(newTenant(), ['owner'])
    const calls = [
      await other.get(`/v1/object-types/${ctx.typeId}`),
      await other.patch(`/v1/object-types/${ctx.typeId}`, { name: 'stolen' }),
      await other.post(`/v1/object-types/${ctx.typeId}/publish`, {}),
      await other.post(`/v1/object-types/${ctx.typeId}/validate`, {}),
      await other.get(`/v1/schema-registry/object-types/${ctx.typeId}`),
      await other.delete(`/v1/object-types/${ctx.typeId}`)
    ]
    for (const res of calls) assert.equal(res.status, 404, res.text)
    const mine = await ctx.owner.get(`/v1/object-types/${ctx.typeId}`)
    assert.equal(mine.body.name, 'Test type')
    assert.equal(mine.body.version, 1)
  })
})
