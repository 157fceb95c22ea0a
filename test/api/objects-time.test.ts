import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { newTenant, publishedType, useOwnerSession } from '../support/harness.js'
import { clockPast, createObject, errorOf, point, shift } from '../fixtures/objects.js'

type Version = { version: number, operation: string, validFrom: string, validTo: string | null, txFrom: string, txTo: string | null, actor: { sub: string, roles: string[] } | null, object: Record<string, any> }

const q = (iso: string) => encodeURIComponent(iso)

describe('GET /v1/objects/:id/history', () => {
  const ctx = useOwnerSession({ sub: 'editor-7', type: true })
  let id: string
  let versions: Version[]
  before(async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'v1' }, geometry: point(1, 1) })).body
    id = o.id
    let last = o.updatedAt
    for (const [i, patch] of [{ attributes: { name: 'v2' } }, { geometry: point(2, 2) }].entries()) {
      await clockPast(ctx.s.db, last)
      const p = await ctx.owner.patch(`/v1/objects/${id}`, patch, { 'If-Match': String(i + 1) })
      assert.equal(p.status, 200, p.text)
      last = p.body.updatedAt
    }
    await clockPast(ctx.s.db, last)
    assert.equal((await ctx.owner.delete(`/v1/objects/${id}`)).status, 204)
    versions = (await ctx.owner.get(`/v1/objects/${id}/history`)).body.items
  })

  it('lists every version in ascending order with its operation, times, actor and object', async () => {
    assert.deepEqual(versions.map(v => v.version), [1, 2, 3, 4])
    assert.deepEqual(versions.map(v => v.operation), ['created', 'updated', 'updated', 'deleted'])
    assert.deepEqual(versions.map(v => v.object.attributes.name), ['v1', 'v2', 'v2', 'v2'])
    assert.deepEqual(versions[2].object.geometry, point(2, 2))
    for (const v of versions) {
      assert.equal(v.object.version, v.version)
      assert.equal(v.object.id, id)
      assert.deepEqual(v.actor, { sub: 'editor-7', roles: ['owner'] })
    }
  })

  it('leaves validTo and txTo open only on the last version', () => {
    const last = versions[versions.length - 1]
    assert.equal(last.validTo, null)
    assert.equal(last.txTo, null)
    for (const v of versions.slice(0, -1)) {
      assert.notEqual(v.txTo, null)
      assert.notEqual(v.validTo, null)
    }
  })

  it("closes each version at the next version's txFrom (and, by default, its validFrom)", () => {
    for (let i = 0; i + 1 < versions.length; i++) {
      assert.equal(versions[i].txTo, versions[i + 1].txFrom)
      assert.equal(versions[i].validTo, versions[i + 1].validFrom)
      assert.ok(versions[i].txFrom < versions[i + 1].txFrom, 'the test spaced its writes by at least a millisecond')
    }
  })

  it('pages the history', async () => {
    const res = await ctx.owner.get(`/v1/objects/${id}/history?limit=2&offset=1`)
    assert.deepEqual(res.body.pagination, { limit: 2, offset: 1, total: 4, hasMore: true })
    assert.deepEqual(res.body.items.map((v: Version) => v.version), [2, 3])
  })

  it('answers 404 for unknown, non-UUID and foreign objects', async () => {
    assert.equal((await ctx.owner.get(`/v1/objects/${randomUUID()}/history`)).status, 404)
    assert.equal((await ctx.owner.get('/v1/objects/x/history')).status, 404)
    assert.equal((await ctx.s.as(newTenant(), ['owner']).get(`/v1/objects/${id}/history`)).status, 404)
  })
})

describe('asOf (transaction time)', () => {
  const ctx = useOwnerSession({ type: true })

  it("returns, at each version's txFrom, exactly that version", async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'a' } })).body
    await clockPast(ctx.s.db, o.updatedAt)
    const p2 = (await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'b' } }, { 'If-Match': '1' })).body
    await clockPast(ctx.s.db, p2.updatedAt)
    const p3 = (await ctx.owner.patch(`/v1/objects/${o.id}`, { attributes: { name: 'c' } }, { 'If-Match': '2' })).body
    const history: Version[] = (await ctx.owner.get(`/v1/objects/${o.id}/history`)).body.items
    for (const v of history) {
      const at = await ctx.owner.get(`/v1/objects/${o.id}?asOf=${q(v.txFrom)}`)
      assert.equal(at.status, 200)
      assert.equal(at.body.version, v.version)
      assert.equal(at.headers.get('etag'), `"${v.version}"`)
      assert.deepEqual(at.body, v.object)
    }
    // The API's own timestamps work as asOf values: createdAt finds v1, each updatedAt its version.
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}?asOf=${q(o.createdAt)}`)).body.attributes.name, 'a')
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}?asOf=${q(p2.updatedAt)}`)).body.attributes.name, 'b')
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}?asOf=${q(shift(p3.updatedAt, -1))}`)).body.attributes.name, 'b')
    assert.equal((await ctx.owner.get(`/v1/objects/${o.id}?asOf=${q(shift(p3.updatedAt, 3_600_000))}`)).body.attributes.name, 'c')
  })

  it('answers 404 for asOf before the creation', async () => {
    const o = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'x' } })).body
    const res = await ctx.owner.get(`/v1/objects/${o.id}?asOf=${q(shift(o.createdAt, -1))}`)
    assert.equal(res.status, 404)
    assert.equal(errorOf(res).code, 'NOT_FOUND')
  })

  it('lists what existed then: not objects created later, but objects deleted since', async () => {
    const t = await publishedType(ctx.owner)
    const early = (await createObject(ctx.owner, { typeId: t, attributes: { name: 'early' } })).body
    const doomed = (await createObject(ctx.owner, { typeId: t, attributes: { name: 'doomed' } })).body
    const mark = await clockPast(ctx.s.db, doomed.createdAt)
    await clockPast(ctx.s.db, mark)
    await createObject(ctx.owner, { typeId: t, attributes: { name: 'late' } })
    assert.equal((await ctx.owner.delete(`/v1/objects/${doomed.id}`)).status, 204)
    await ctx.owner.patch(`/v1/objects/${early.id}`, { attributes: { name: 'early-changed' } }, { 'If-Match': '1' })

    const then = await ctx.owner.get(`/v1/objects?typeId=${t}&asOf=${q(mark)}`)
    assert.equal(then.status, 200)
    assert.deepEqual(then.body.items.map((o: { attributes: { name: string } }) => o.attributes.name), ['early', 'doomed'])
    assert.equal(then.body.pagination.total, 2)
    for (const o of then.body.items) assert.equal(o.objectId, o.id)
    const now = await ctx.owner.get(`/v1/objects?typeId=${t}`)
    assert.deepEqual(now.body.items.map((o: { attributes: { name: string } }) => o.attributes.name), ['early-changed', 'late'])
    const sorted = await ctx.owner.get(`/v1/objects?typeId=${t}&asOf=${q(mark)}&sortBy=attributes.name&sortOrder=desc`)
    assert.deepEqual(sorted.body.items.map((o: { attributes: { name: string } }) => o.attributes.name), ['early', 'doomed'])
    const before = await ctx.owner.get(`/v1/objects?typeId=${t}&asOf=${q(shift(early.createdAt, -1))}`)
    assert.equal(before.body.pagination.total, 0)
  })
})

describe('validAt (valid time)', () => {
  const ctx = useOwnerSession({ type: true })

  async function timeline () {
    const o = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, attributes: { name: 'first' }, validFrom: '2020-01-01T00:00:00.000Z' })
    assert.equal(o.status, 201, o.text)
    const p = await ctx.owner.patch(`/v1/objects/${o.body.id}`, { attributes: { name: 'second' }, validFrom: '2021-01-01T00:00:00.000Z' }, { 'If-Match': '1' })
    assert.equal(p.status, 200, p.text)
    return o.body.id as string
  }

  it('returns the version that was valid at the instant, and 404 before the first validFrom', async () => {
    const id = await timeline()
    const at = (iso: string) => ctx.owner.get(`/v1/objects/${id}?validAt=${q(iso)}`)
    const v1 = await at('2020-06-01T00:00:00.000Z')
    assert.equal(v1.status, 200)
    assert.equal(v1.body.version, 1)
    assert.equal(v1.body.attributes.name, 'first')
    assert.equal((await at('2021-06-01T00:00:00.000Z')).body.version, 2)
    assert.equal((await at('2021-01-01T00:00:00.000Z')).body.version, 2, 'validFrom is inclusive')
    assert.equal((await at('2020-12-31T23:59:59.999Z')).body.version, 1, 'validTo is exclusive')
    assert.equal((await at('2019-06-01T00:00:00.000Z')).status, 404)
    const h: Version[] = (await ctx.owner.get(`/v1/objects/${id}/history`)).body.items
    assert.equal(h[0].validTo, '2021-01-01T00:00:00.000Z')
    assert.equal(h[1].validFrom, '2021-01-01T00:00:00.000Z')
  })

  it('lists by valid time', async () => {
    const id = await timeline()
    const list = await ctx.owner.get(`/v1/objects?validAt=${q('2020-06-01T00:00:00.000Z')}&typeId=${ctx.typeId}`)
    const mine = list.body.items.find((o: { id: string }) => o.id === id)
    assert.equal(mine.attributes.name, 'first')
    assert.equal((await ctx.owner.get(`/v1/objects?validAt=${q('2019-01-01T00:00:00.000Z')}&typeId=${ctx.typeId}`)).body.pagination.total, 0)
  })

  it('no longer finds a deleted object after its deletion, but still finds what was valid before it', async () => {
    const id = await timeline()
    assert.equal((await ctx.owner.delete(`/v1/objects/${id}`)).status, 204)
    const later = await ctx.owner.get(`/v1/objects/${id}?validAt=${q(shift(new Date().toISOString(), 86_400_000))}`)
    assert.equal(later.status, 404, later.text)
    const list = await ctx.owner.get(`/v1/objects?validAt=${q(shift(new Date().toISOString(), 86_400_000))}&typeId=${ctx.typeId}`)
    assert.ok(!list.body.items.some((o: { id: string }) => o.id === id))
    assert.equal((await ctx.owner.get(`/v1/objects/${id}?validAt=${q('2020-06-01T00:00:00.000Z')}`)).body.attributes.name, 'first')
  })

  it('stores validFrom at millisecond precision, so the value it returns finds the version', async () => {
    const o = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, attributes: { name: 'micro' }, validFrom: '2020-03-01T10:00:00.123456Z' })
    assert.equal(o.status, 201, o.text)
    assert.equal(o.body.validFrom, '2020-03-01T10:00:00.123Z')
    const at = await ctx.owner.get(`/v1/objects/${o.body.id}?validAt=${q(o.body.validFrom)}`)
    assert.equal(at.status, 200, at.text)
  })

  it('answers 400 when a list asks for asOf and validAt at once', async () => {
    const now = new Date().toISOString()
    const res = await ctx.owner.get(`/v1/objects?asOf=${q(now)}&validAt=${q(now)}`)
    assert.equal(res.status, 400)
  })
})
