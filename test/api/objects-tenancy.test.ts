import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, newTenant, publishedType, type TestServer, type Client } from '../support/harness.js'
import { createObject, errorOf, point, tenantCounts } from '../fixtures/objects.js'

describe('tenant isolation of objects', () => {
  let s: TestServer
  let tenantA: string
  let tenantB: string
  let a: Client
  let b: Client
  let typeA: string
  let objectA: Record<string, any>
  before(async () => {
    s = await startServer()
    tenantA = newTenant('a')
    tenantB = newTenant('b')
    a = s.as(tenantA, ['owner'])
    b = s.as(tenantB, ['owner'])
    typeA = await publishedType(a, { publicIdTemplate: 'A-{{seq}}' })
    objectA = (await createObject(a, { typeId: typeA, attributes: { name: 'secret' }, geometry: point() })).body
    // B has data of its own, so "nothing of A" is not just "nothing at all".
    const typeB = await publishedType(b)
    await createObject(b, { typeId: typeB, attributes: { name: 'mine' } })
  })
  after(() => s.close())

  it("reads none of A's objects: 404 by id, now, asOf and validAt, and in history", async () => {
    for (const path of [
      `/v1/objects/${objectA.id}`,
      `/v1/objects/${objectA.id}?asOf=${encodeURIComponent(objectA.createdAt)}`,
      `/v1/objects/${objectA.id}?validAt=${encodeURIComponent(objectA.createdAt)}`,
      `/v1/objects/${objectA.id}/history`
    ]) {
      const res = await b.get(path)
      assert.equal(res.status, 404, path)
      assert.equal(errorOf(res).code, 'NOT_FOUND')
    }
  })

  it("lists none of A's objects, with or without A's typeId, now or in the past", async () => {
    const all = await b.get('/v1/objects')
    assert.equal(all.body.pagination.total, 1)
    assert.ok(all.body.items.every((o: { id: string }) => o.id !== objectA.id))
    for (const q of [`typeId=${typeA}`, `typeId=${typeA}&asOf=${encodeURIComponent(new Date().toISOString())}`, `typeId=${typeA}&validAt=${encodeURIComponent(new Date().toISOString())}`]) {
      const res = await b.get(`/v1/objects?${q}`)
      assert.equal(res.status, 200)
      assert.deepEqual(res.body.pagination, { limit: 100, offset: 0, total: 0, hasMore: false }, q)
    }
  })

  it("patches and deletes none of A's objects, and A's object is unchanged afterwards", async () => {
    const countsA = await tenantCounts(s.db, tenantA)
    const p = await b.patch(`/v1/objects/${objectA.id}`, { attributes: { name: 'pwned' } }, { 'If-Match': '1' })
    assert.equal(p.status, 404)
    const d = await b.delete(`/v1/objects/${objectA.id}`)
    assert.equal(d.status, 404)
    const dm = await b.delete(`/v1/objects/${objectA.id}`, { 'If-Match': '1' })
    assert.equal(dm.status, 404)
    const now = await a.get(`/v1/objects/${objectA.id}`)
    assert.deepEqual(now.body, objectA)
    assert.deepEqual(await tenantCounts(s.db, tenantA), countsA)
  })

  it("cannot create objects with A's object type", async () => {
    const countsA = await tenantCounts(s.db, tenantA)
    const res = await b.post('/v1/objects', { typeId: typeA, attributes: { name: 'intruder' } })
    assert.equal(res.status, 400)
    assert.equal(errorOf(res).details.field, 'typeId')
    assert.deepEqual(await tenantCounts(s.db, tenantA), countsA)
    const inA = await s.db.raw('SELECT count(*)::int AS n FROM objects WHERE type_id = ? AND tenant_id <> ?', [typeA, tenantA])
    assert.equal(inA.rows[0].n, 0)
  })

  it("does not let B's writes touch A's publicId sequence", async () => {
    const second = await createObject(a, { typeId: typeA })
    assert.equal(second.body.publicId, 'A-2')
  })
})
