import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { publishedType, useOwnerSession } from '../support/harness.js'
import { clockPast, createObject, errorOf } from '../fixtures/objects.js'

type Item = Record<string, any>

/** The order docs/behaviour.md promises: the sort key (nulls last either way), then id, both in `dir`. */
function expectedOrder (items: Item[], key: (o: Item) => unknown, dir: 'asc' | 'desc'): string[] {
  const sign = dir === 'asc' ? 1 : -1
  const cmp = (a: unknown, b: unknown) => (a as never) < (b as never) ? -1 : (a as never) > (b as never) ? 1 : 0
  return [...items].sort((a, b) => {
    const ka = key(a) ?? null
    const kb = key(b) ?? null
    if (ka === null && kb !== null) return 1
    if (kb === null && ka !== null) return -1
    return sign * (cmp(ka, kb) || cmp(a.id, b.id))
  }).map(o => o.id)
}

describe('GET /v1/objects', () => {
  const ctx = useOwnerSession()
  let typeA: string
  let typeB: string
  let all: Item[]
  const names = ['delta', 'alpha', 'echo', 'charlie', 'bravo']

  before(async () => {
    typeA = await publishedType(ctx.owner, {
      publicIdTemplate: '{{attributes.name}}',
      attributeSchema: { type: 'object', properties: { name: { type: 'string' }, height: { type: 'number' }, spec: { type: 'object' } } }
    })
    typeB = await publishedType(ctx.owner)
    // Sequential creates; two share a height (tie broken by id); one has no height (sorts last).
    const heights = [5, 1, 5, undefined, 12]
    for (const [i, name] of names.entries()) {
      const attributes: Item = { name, spec: { rank: 10 - i } }
      if (heights[i] !== undefined) attributes.height = heights[i]
      await createObject(ctx.owner, { typeId: typeA, attributes })
    }
    await createObject(ctx.owner, { typeId: typeB, attributes: { height: 3 } })
    const last = await createObject(ctx.owner, { typeId: typeB, attributes: { height: 7 } })
    // Touch two objects in a known order so updatedAt differs from createdAt order.
    const listed = await ctx.owner.get('/v1/objects?limit=1000')
    await clockPast(ctx.s.db, last.body.createdAt)
    for (const o of [listed.body.items[3], listed.body.items[0]]) {
      const p = await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { touched: true } }, { 'If-Match': String(o.version) })
      assert.equal(p.status, 200, p.text)
      await clockPast(ctx.s.db, p.body.updatedAt)
    }
    // A deleted object is never listed.
    const gone = await createObject(ctx.owner, { typeId: typeB })
    assert.equal((await ctx.owner.delete(`/v1/objects/${gone.body.id}`)).status, 204)
    all = (await ctx.owner.get('/v1/objects?limit=1000')).body.items
  })

  it('answers the pagination envelope, items carrying objectId === id and version', async () => {
    const res = await ctx.owner.get('/v1/objects')
    assert.equal(res.status, 200)
    assert.deepEqual(res.body.pagination, { limit: 100, offset: 0, total: 7, hasMore: false })
    assert.equal(res.body.items.length, 7)
    for (const o of res.body.items) {
      assert.equal(o.objectId, o.id)
      assert.equal(typeof o.version, 'number')
      for (const f of ['typeId', 'publicId', 'attributes', 'geometry', 'workflowState', 'createdAt', 'updatedAt']) assert.ok(f in o, f)
    }
    assert.equal(res.body.items.filter((o: Item) => o.version === 2).length, 2)
  })

  it('orders by createdAt asc, then id, by default', async () => {
    assert.deepEqual(all.map(o => o.id), expectedOrder(all, o => o.createdAt, 'asc'))
    assert.deepEqual(all.slice(0, 5).map(o => o.attributes.name), names)
  })

  it('pages with limit and offset and reports hasMore', async () => {
    const p1 = await ctx.owner.get('/v1/objects?limit=3')
    const p3 = await ctx.owner.get('/v1/objects?limit=3&offset=6')
    const beyond = await ctx.owner.get('/v1/objects?limit=3&offset=50')
    assert.deepEqual(p1.body.pagination, { limit: 3, offset: 0, total: 7, hasMore: true })
    assert.deepEqual(p1.body.items.map((o: Item) => o.id), all.slice(0, 3).map(o => o.id))
    assert.deepEqual(p3.body.pagination, { limit: 3, offset: 6, total: 7, hasMore: false })
    assert.deepEqual(p3.body.items.map((o: Item) => o.id), [all[6].id])
    assert.deepEqual(beyond.body, { items: [], pagination: { limit: 3, offset: 50, total: 7, hasMore: false } })
  })

  it('filters by typeId', async () => {
    const a = await ctx.owner.get(`/v1/objects?typeId=${typeA}`)
    assert.equal(a.body.pagination.total, 5)
    assert.ok(a.body.items.every((o: Item) => o.typeId === typeA))
    assert.equal((await ctx.owner.get(`/v1/objects?typeId=${typeB}`)).body.pagination.total, 2)
    assert.equal((await ctx.owner.get(`/v1/objects?typeId=${randomUUID()}`)).body.pagination.total, 0)
    assert.equal((await ctx.owner.get('/v1/objects?typeId=pipes')).status, 400)
  })

  const sorts: Array<[string, (o: Item) => unknown]> = [
    ['id', o => o.id],
    ['typeId', o => o.typeId],
    ['workflowState', o => o.workflowState],
    ['createdAt', o => o.createdAt],
    ['updatedAt', o => o.updatedAt],
    ['attributes.height', o => o.attributes.height],
    ['attributes.spec.rank', o => o.attributes.spec?.rank]
  ]
  for (const [field, key] of sorts) {
    for (const dir of ['asc', 'desc'] as const) {
      it(`sorts by ${field} ${dir}`, async () => {
        const res = await ctx.owner.get(`/v1/objects?sortBy=${field}&sortOrder=${dir}`)
        assert.equal(res.status, 200, res.text)
        assert.deepEqual(res.body.items.map((o: Item) => o.id), expectedOrder(all, key, dir))
      })
    }
  }

  it('sorts numbers in attributes numerically, missing values last in both directions', async () => {
    const asc = (await ctx.owner.get(`/v1/objects?typeId=${typeA}&sortBy=attributes.height`)).body.items.map((o: Item) => o.attributes.height ?? null)
    const desc = (await ctx.owner.get(`/v1/objects?typeId=${typeA}&sortBy=attributes.height&sortOrder=desc`)).body.items.map((o: Item) => o.attributes.height ?? null)
    assert.deepEqual(asc, [1, 5, 5, 12, null])
    assert.deepEqual(desc, [12, 5, 5, 1, null])
  })

  for (const dir of ['asc', 'desc'] as const) {
    it(`sorts by publicId and attributes.name ${dir}`, async () => {
      const byPublicId = await ctx.owner.get(`/v1/objects?typeId=${typeA}&sortBy=publicId&sortOrder=${dir}`)
      const byName = await ctx.owner.get(`/v1/objects?typeId=${typeA}&sortBy=attributes.name&sortOrder=${dir}`)
      const sorted = [...names].sort()
      if (dir === 'desc') sorted.reverse()
      assert.deepEqual(byPublicId.body.items.map((o: Item) => o.publicId), sorted)
      assert.deepEqual(byName.body.items.map((o: Item) => o.attributes.name), sorted)
    })
  }

  it('answers 400 to an unknown sortBy or sortOrder', async () => {
    for (const q of ['sortBy=name', 'sortBy=attributes.', 'sortBy=attributes.a;drop', 'sortBy=geometry', 'sortBy=createdAt&sortOrder=up']) {
      const res = await ctx.owner.get(`/v1/objects?${q}`)
      assert.equal(res.status, 400, q)
      assert.equal(errorOf(res).code, 'VALIDATION_ERROR')
    }
  })

  it('answers 400 to limit 0, limit 1001, offset -1 and non-numbers', async () => {
    for (const q of ['limit=0', 'limit=1001', 'offset=-1', 'limit=ten', 'limit=1.5', 'offset=99999999999999999999']) {
      const res = await ctx.owner.get(`/v1/objects?${q}`)
      assert.equal(res.status, 400, q)
      assert.match(errorOf(res).details.field, /^(limit|offset)$/)
    }
    assert.equal((await ctx.owner.get('/v1/objects?limit=1000')).status, 200)
    assert.equal((await ctx.owner.get('/v1/objects?limit=1')).body.pagination.hasMore, true)
  })

  it('answers 400 to unknown query parameters', async () => {
    assert.equal((await ctx.owner.get('/v1/objects?colour=red')).status, 400)
  })
})
