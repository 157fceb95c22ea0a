import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { startServer, newTenant, publishedType, useOwnerSession, type TestServer } from '../support/harness.js'
import { createObject, errorOf, tenantCounts } from '../fixtures/objects.js'

const utcDay = (iso: string) => iso.slice(0, 10).replace(/-/g, '')

describe('publicId templates', () => {
  const ctx = useOwnerSession()

  const create = async (typeId: string, attributes: Record<string, unknown> = {}) => (await createObject(ctx.owner, { typeId, attributes })).body

  it('numbers objects with {{seq}} from 1', async () => {
    const t = await publishedType(ctx.owner, { publicIdTemplate: 'P-{{seq}}' })
    const ids = []
    for (let i = 0; i < 3; i++) ids.push((await create(t)).publicId)
    assert.deepEqual(ids, ['P-1', 'P-2', 'P-3'])
  })

  it('zero-pads {{seq:5}}', async () => {
    const t = await publishedType(ctx.owner, { publicIdTemplate: '{{seq:5}}' })
    assert.equal((await create(t)).publicId, '00001')
    assert.equal((await create(t)).publicId, '00002')
  })

  it('renders {{year}}{{month}}{{day}} as the UTC date of creation', async () => {
    const t = await publishedType(ctx.owner, { publicIdTemplate: 'D{{year}}{{month}}{{day}}-{{seq}}' })
    const before = new Date().toISOString()
    const o = await create(t)
    const after = new Date().toISOString()
    assert.ok([`D${utcDay(before)}-1`, `D${utcDay(after)}-1`].includes(o.publicId), o.publicId)
  })

  it('renders {{type.key}} and {{attributes.<name>}}', async () => {
    const key = `pipe_${randomUUID().slice(0, 6)}`
    const t = await publishedType(ctx.owner, { key, publicIdTemplate: '{{type.key}}/{{attributes.name}}/{{attributes.spec.dn}}' })
    assert.equal((await create(t, { name: 'Main', spec: { dn: 150 } })).publicId, `${key}/Main/150`)
  })

  it('keeps a sequence per tenant and per type', async () => {
    // publicId is unique per tenant, so the two types of one tenant tell their ids apart by a prefix.
    const a1 = await publishedType(ctx.owner, { publicIdTemplate: 'A-{{seq}}' })
    const a2 = await publishedType(ctx.owner, { publicIdTemplate: 'B-{{seq}}' })
    const other = ctx.s.as(newTenant(), ['owner'])
    const b1 = await publishedType(other, { publicIdTemplate: 'A-{{seq}}' })
    assert.equal((await create(a1)).publicId, 'A-1')
    assert.equal((await create(a1)).publicId, 'A-2')
    assert.equal((await create(a2)).publicId, 'B-1')
    assert.equal((await createObject(other, { typeId: b1 })).body.publicId, 'A-1', 'another tenant has its own sequence and its own publicId space')
    assert.equal((await create(a1)).publicId, 'A-3')
    assert.equal((await create(a2)).publicId, 'B-2')
  })

  it('makes publicId equal to id without a template', async () => {
    const t = await publishedType(ctx.owner)
    const o = await create(t)
    assert.equal(o.publicId, o.id)
  })

  it('answers 409 CONFLICT when the template renders a publicId already taken, leaving nothing behind', async () => {
    const t = await publishedType(ctx.owner, { publicIdTemplate: 'NAME-{{attributes.name}}' })
    await create(t, { name: 'same' })
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const res = await ctx.owner.post('/v1/objects', { typeId: t, attributes: { name: 'same' } })
    assert.equal(res.status, 409, res.text)
    const e = errorOf(res)
    assert.equal(e.code, 'CONFLICT')
    assert.equal(e.details.publicId, 'NAME-same')
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
  })

  it('uses no sequence number for a refused create: the sequence stays gapless', async () => {
    const t = await publishedType(ctx.owner, {
      publicIdTemplate: 'G-{{seq}}-{{attributes.name}}',
      attributeSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } }
    })
    assert.equal((await create(t, { name: 'a' })).publicId, 'G-1-a')
    assert.equal((await ctx.owner.post('/v1/objects', { typeId: t, attributes: {} })).status, 400)
    assert.equal((await create(t, { name: 'b' })).publicId, 'G-2-b')
  })

  it('keeps the publicId when the attributes it was made from change', async () => {
    const t = await publishedType(ctx.owner, { publicIdTemplate: 'K-{{attributes.name}}' })
    const o = await create(t, { name: 'before' })
    const p = await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'after' } }, { 'If-Match': '1' })
    assert.equal(p.body.publicId, 'K-before')
  })

  it('refuses a rendered publicId that is empty or too long with 400 (never 500)', async () => {
    const t = await publishedType(ctx.owner, { publicIdTemplate: '{{attributes.code}}' })
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const empty = await ctx.owner.post('/v1/objects', { typeId: t, attributes: {} })
    assert.equal(empty.status, 400, empty.text)
    assert.equal(errorOf(empty).details.field, 'publicId')
    // Random text does not compress: far beyond what a unique index entry can hold.
    const long = await ctx.owner.post('/v1/objects', { typeId: t, attributes: { code: randomBytes(6000).toString('base64') } })
    assert.equal(long.status, 400, long.text)
    assert.equal(errorOf(long).details.field, 'publicId')
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
  })

  it('applies a changed template only once its version is published', async () => {
    const t = await publishedType(ctx.owner, { publicIdTemplate: 'OLD-{{seq}}' })
    assert.equal((await create(t)).publicId, 'OLD-1')
    assert.equal((await ctx.owner.patch(`/v1/object-types/${t}`, { publicIdTemplate: 'NEW-{{seq:3}}' })).status, 200)
    assert.equal((await create(t)).publicId, 'OLD-2')
    assert.equal((await ctx.owner.post(`/v1/object-types/${t}/publish`, {})).status, 200)
    assert.equal((await create(t)).publicId, 'NEW-003')
  })
})

describe('concurrent creates with a {{seq}} template', () => {
  let s: TestServer
  before(async () => { s = await startServer() })
  after(() => s.close())

  it('hands out distinct, gapless sequence numbers', async () => {
    const owner = s.as(newTenant(), ['owner'])
    const t = await publishedType(owner, { publicIdTemplate: '{{seq}}' })
    const n = 20
    const results = await Promise.all(Array.from({ length: n }, () => owner.post('/v1/objects', { typeId: t })))
    assert.deepEqual(results.map(r => r.status), Array(n).fill(201))
    const seqs = results.map(r => Number(r.body.publicId)).sort((a, b) => a - b)
    assert.deepEqual(seqs, Array.from({ length: n }, (_, i) => i + 1))
  })
})
