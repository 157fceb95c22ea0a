import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { useOwnerSession } from '../support/harness.js'
import { errorOf, eventsFor, point, tenantCounts } from '../fixtures/objects.js'

describe('POST /v1/objects/batch', () => {
  const ctx = useOwnerSession({
    type: {
      publicIdTemplate: 'S-{{seq}}',
      attributeSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, height: { type: 'number', minimum: 0 } } }
    }
  })
  const item = (i: number, extra: Record<string, unknown> = {}) => ({ typeId: ctx.typeId, attributes: { name: `n${i}`, height: i, ...extra }, geometry: point(13 + i / 1000, 52) })

  it('creates every item in order, each with its own history, audit and outbox event, and counts them', async () => {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const res = await ctx.owner.post('/v1/objects/batch', { items: Array.from({ length: 25 }, (_, i) => item(i)) })
    assert.equal(res.status, 201, res.text)
    assert.equal(res.body.items.length, 25)
    assert.deepEqual(res.body.items.map((o: { attributes: { name: string } }) => o.attributes.name), Array.from({ length: 25 }, (_, i) => `n${i}`))
    const after = await tenantCounts(ctx.s.db, ctx.tenant)
    for (const k of ['objects', 'versions', 'audit', 'outbox', 'seq'] as const) assert.equal(after[k] - before[k], 25, k)
    const first = res.body.items[0]
    assert.deepEqual((await ctx.owner.get(`/v1/objects/${first.id}`)).body, first, 'the answer is the object as GET shows it')
    assert.deepEqual(await eventsFor(ctx.s.db, ctx.tenant, first.id), { audit: ['object.created'], outbox: ['object.created'] })
    const list = await ctx.owner.get(`/v1/objects?typeId=${ctx.typeId}&limit=1`)
    assert.equal(list.body.pagination.total, after.objects, 'the counters count every item')
  })

  it('refuses the whole batch with 400 naming the failing item, leaving nothing behind', async () => {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const items = Array.from({ length: 20 }, (_, i) => item(i))
    items[17] = item(17, { height: -1 })
    const res = await ctx.owner.post('/v1/objects/batch', { items })
    assert.equal(res.status, 400, res.text)
    const e = errorOf(res)
    assert.equal(e.code, 'VALIDATION_ERROR')
    assert.equal(e.details.field, 'items[17].attributes.height')
    assert.equal(e.details.index, 17)
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
  })

  it('names a malformed item by its path, and refuses an empty or oversized batch', async () => {
    const bad = await ctx.owner.post('/v1/objects/batch', { items: [item(0), { typeId: ctx.typeId, attributes: {}, colour: 'red' }] })
    assert.equal(bad.status, 400)
    assert.match(errorOf(bad).details.field, /^items\[1\]/)
    assert.equal((await ctx.owner.post('/v1/objects/batch', { items: [] })).status, 400)
    assert.equal((await ctx.owner.post('/v1/objects/batch', { items: Array.from({ length: 1001 }, (_, i) => item(i)) })).status, 400)
  })

  it('needs objects:write', async () => {
    const viewer = ctx.s.as(ctx.tenant, ['viewer'])
    assert.equal((await viewer.post('/v1/objects/batch', { items: [item(0)] })).status, 403)
  })
})
