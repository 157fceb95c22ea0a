import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startServer, newTenant, publishedType, token, type TestServer, type Client } from '../support/harness.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const HEX64 = /^[0-9a-f]{64}$/

interface Event {
  id: string, sequence: number, type: string, actor: { sub: string, roles: string[] } | null,
  resourceType: string | null, resourceId: string | null, data: any, occurredAt: string, previousHash: string, hash: string
}

describe('audit API', () => {
  let s: TestServer
  before(async () => { s = await startServer() })
  after(() => s.close())

  /** A tenant with a published type and its owner. */
  async function tenantWithType (): Promise<{ tenant: string, owner: Client, typeId: string }> {
    const tenant = newTenant('audit')
    const owner = s.as(tenant, ['owner'], 'owner-1')
    return { tenant, owner, typeId: await publishedType(owner) }
  }

  async function events (c: Client, query = ''): Promise<Event[]> {
    const res = await c.get(`/v1/audit/events?limit=1000${query}`)
    assert.equal(res.status, 200, res.text)
    return res.body.items
  }

  describe('GET /v1/audit/events', () => {
    it('lists a just-written event at once, newest first, in the CONTRACT shape', async () => {
      const { owner, typeId } = await tenantWithType()
      const created = await owner.post('/v1/objects', { typeId, attributes: { name: 'a' } })
      assert.equal(created.status, 201)
      const res = await owner.get('/v1/audit/events')
      assert.equal(res.status, 200, res.text)
      const items: Event[] = res.body.items
      assert.equal(items[0].type, 'object.created')
      assert.equal(items[0].resourceId, created.body.id)
      assert.deepEqual(Object.keys(items[0]).sort(), ['actor', 'data', 'hash', 'id', 'occurredAt', 'previousHash', 'resourceId', 'resourceType', 'sequence', 'type'])
      assert.deepEqual(items[0].actor, { sub: 'owner-1', roles: ['owner'] })
      assert.equal(items[0].resourceType, 'object')
      assert.match(items[0].occurredAt, ISO_MS)
      assert.match(items[0].hash, HEX64)
      assert.deepEqual(items.map(e => e.sequence), items.map((_, i) => items.length - i), 'sequence desc down to 1')
      for (let i = 0; i + 1 < items.length; i++) assert.equal(items[i].previousHash, items[i + 1].hash)
      assert.equal(items[items.length - 1].previousHash, '0'.repeat(64))
      assert.deepEqual(res.body.pagination, { limit: 100, offset: 0, total: items.length, hasMore: false })
    })

    it('records object.created, object.updated and object.deleted for object writes', async () => {
      const { owner, typeId } = await tenantWithType()
      const o = await owner.post('/v1/objects', { typeId, attributes: { name: 'a' } })
      assert.equal((await owner.patch(`/v1/objects/${o.body.id}`, { attributes: { name: 'b' } }, { 'If-Match': '1' })).status, 200)
      assert.equal((await owner.delete(`/v1/objects/${o.body.id}`)).status, 204)
      const items = await events(owner, `&resourceId=${o.body.id}`)
      assert.deepEqual(items.map(e => [e.type, e.data.version]), [['object.deleted', 3], ['object.updated', 2], ['object.created', 1]])
      assert.ok(items.every(e => e.resourceType === 'object' && e.data.typeId === typeId))
    })

    it('filters by type, resourceType, resourceId, from (inclusive) and to (exclusive)', async () => {
      const { owner, typeId } = await tenantWithType()
      const a = await owner.post('/v1/objects', { typeId, attributes: { name: 'a' } })
      const b = await owner.post('/v1/objects', { typeId, attributes: { name: 'b' } })
      await owner.patch(`/v1/objects/${a.body.id}`, { attributes: { name: 'a2' } }, { 'If-Match': '1' })
      const all = await events(owner)

      assert.deepEqual((await events(owner, '&type=object.created')).map(e => e.resourceId), [b.body.id, a.body.id])
      assert.deepEqual((await events(owner, `&resourceId=${a.body.id}`)).map(e => e.type), ['object.updated', 'object.created'])
      const typeEvents = await events(owner, '&resourceType=objectType')
      assert.ok(typeEvents.length >= 2 && typeEvents.every(e => e.resourceType === 'objectType' && e.resourceId === typeId))
      assert.deepEqual(await events(owner, `&type=object.created&resourceId=${b.body.id}`).then(x => x.map(e => e.id)), [all[1].id])

      const pivot = all.find(e => e.type === 'object.updated') as Event
      const from = await events(owner, `&from=${encodeURIComponent(pivot.occurredAt)}`)
      assert.ok(from.some(e => e.id === pivot.id), 'from is inclusive')
      assert.ok(from.every(e => e.occurredAt >= pivot.occurredAt))
      const to = await events(owner, `&to=${encodeURIComponent(pivot.occurredAt)}`)
      assert.ok(!to.some(e => e.id === pivot.id), 'to is exclusive')
      assert.ok(to.length > 0 && to.every(e => e.occurredAt < pivot.occurredAt))
      assert.equal(from.length + to.length, all.length)
    })

    it('pages with limit and offset over a stable newest-first order', async () => {
      const { owner, typeId } = await tenantWithType()
      for (let i = 0; i < 3; i++) await owner.post('/v1/objects', { typeId, attributes: { name: `o${i}` } })
      const all = await events(owner)
      const p1 = await owner.get('/v1/audit/events?limit=2')
      const p2 = await owner.get('/v1/audit/events?limit=2&offset=2')
      assert.deepEqual(p1.body.pagination, { limit: 2, offset: 0, total: all.length, hasMore: true })
      assert.deepEqual([...p1.body.items, ...p2.body.items].map((e: Event) => e.id), all.slice(0, 4).map(e => e.id))
      const last = await owner.get(`/v1/audit/events?limit=2&offset=${all.length - 1}`)
      assert.equal(last.body.items.length, 1)
      assert.equal(last.body.pagination.hasMore, false)
    })

    it('answers 400 for a limit outside 1..1000, an unknown parameter, a bad timestamp, or to before from', async () => {
      const { owner } = await tenantWithType()
      for (const q of ['limit=0', 'limit=1001', 'offset=-1', 'sort=asc', 'from=yesterday',
        'from=2026-01-02T00:00:00.000Z&to=2026-01-01T00:00:00.000Z']) {
        const res = await owner.get(`/v1/audit/events?${q}`)
        assert.equal(res.status, 400, q)
        assert.equal(res.body.error.code, 'VALIDATION_ERROR', q)
      }
    })

    it('answers 403 for viewer and operator, and lists for admin and owner', async () => {
      const { tenant } = await tenantWithType()
      for (const role of ['viewer', 'operator']) {
        const res = await s.as(tenant, [role]).get('/v1/audit/events')
        assert.equal(res.status, 403, role)
        assert.equal(res.body.error.code, 'FORBIDDEN')
      }
      for (const role of ['admin', 'owner']) assert.equal((await s.as(tenant, [role]).get('/v1/audit/events')).status, 200, role)
    })

    it('records a permission denial as permission.denied in the tenant chain', async () => {
      const { tenant, owner, typeId } = await tenantWithType()
      const denied = await s.as(tenant, ['viewer'], 'viewer-9').post('/v1/objects', { typeId, attributes: {} })
      assert.equal(denied.status, 403)
      const items = await events(owner, '&type=permission.denied')
      assert.equal(items.length, 1)
      assert.deepEqual(items[0].actor, { sub: 'viewer-9', roles: ['viewer'] })
      assert.deepEqual({ resource: items[0].data.resource, action: items[0].data.action }, { resource: 'objects', action: 'write' })
    })

    it('records auth.failed in the token\'s tenant when the signature verified but the token expired', async () => {
      const { tenant, owner } = await tenantWithType()
      const expired = token({ tenant, roles: ['owner'], sub: 'late-user', exp: Math.floor(Date.now() / 1000) - 60 })
      const res = await s.request('GET', '/v1/objects', { token: expired })
      assert.equal(res.status, 401)
      const items = await events(owner, '&type=auth.failed')
      assert.equal(items.length, 1)
      assert.equal(items[0].actor, null)
      assert.equal(items[0].data.reason, 'token expired')
      assert.equal(items[0].data.sub, 'late-user')
    })

    it('records a bad-signature auth.failed in _system, readable by system_admin only', async () => {
      const { tenant, owner } = await tenantWithType()
      const requestId = `audit-test-${randomUUID()}`
      const forged = token({ tenant, roles: ['owner'] }, { secret: 'another-secret-that-is-also-32-characters-long' })
      assert.equal((await s.request('GET', '/v1/objects', { token: forged, headers: { 'X-Request-Id': requestId } })).status, 401)

      assert.deepEqual(await events(owner, '&type=auth.failed'), [], 'nothing lands in the claimed tenant')
      const sysAdmin = s.as(newTenant('ops'), ['system_admin'])
      const system = await events(sysAdmin, '&tenant=_system&type=auth.failed')
      const mine = system.find(e => e.data.requestId === requestId)
      assert.ok(mine, 'the event is in the _system chain')
      assert.equal(mine.actor, null)

      const proof = await sysAdmin.get(`/v1/audit/events/${mine.id}/proof?tenant=_system`)
      assert.equal(proof.status, 200, proof.text)
      assert.equal(proof.body.valid, true)

      const refused = await owner.get('/v1/audit/events?tenant=_system')
      assert.equal(refused.status, 403)
      assert.match(refused.body.error.message, /system_admin/)
      assert.equal((await owner.get(`/v1/audit/events/${mine.id}/proof?tenant=_system`)).status, 403)
      assert.equal((await sysAdmin.get('/v1/audit/events')).status, 403, 'system_admin has no tenant audit grant')
      const denial = await events(owner, '&type=permission.denied')
      assert.equal(denial.length, 2, 'both refusals are in the owner\'s own chain')
    })

    it('answers 403 for any other tenant than one\'s own or _system', async () => {
      const { owner } = await tenantWithType()
      const other = await tenantWithType()
      const res = await owner.get(`/v1/audit/events?tenant=${other.tenant}`)
      assert.equal(res.status, 403)
      assert.equal(res.body.error.code, 'FORBIDDEN')
      assert.equal((await other.owner.get(`/v1/audit/events?tenant=${other.tenant}`)).status, 200, 'naming one\'s own tenant is fine')
    })
  })

  describe('GET /v1/audit/events/:id/proof', () => {
    it('proves an event of an intact chain', async () => {
      const { owner, typeId } = await tenantWithType()
      await owner.post('/v1/objects', { typeId, attributes: { name: 'a' } })
      const items = await events(owner)
      const res = await owner.get(`/v1/audit/events/${items[1].id}/proof`)
      assert.equal(res.status, 200, res.text)
      assert.deepEqual(res.body, {
        eventId: items[1].id,
        sequence: items[1].sequence,
        hash: items[1].hash,
        previousHash: items[1].previousHash,
        valid: true,
        checks: { hashMatches: true, linkMatches: true, chainIntact: true },
        headSequence: items[0].sequence,
        headHash: items[0].hash
      })
    })

    it('answers valid false with brokenAt after a row of the chain is altered in the database', async () => {
      const { tenant, owner, typeId } = await tenantWithType()
      await owner.post('/v1/objects', { typeId, attributes: { name: 'a' } })
      const items = await events(owner)
      await s.db.raw(`UPDATE audit_events SET data = data || '{"forged": true}' WHERE tenant_id = ? AND sequence = 1`, [tenant])
      const res = await owner.get(`/v1/audit/events/${items[0].id}/proof`)
      assert.equal(res.status, 200)
      assert.equal(res.body.valid, false)
      assert.equal(res.body.brokenAt, 1)
      assert.deepEqual(res.body.checks, { hashMatches: true, linkMatches: true, chainIntact: false })
    })

    it('answers 404 for another tenant\'s event, an unknown id and a malformed id', async () => {
      const { owner } = await tenantWithType()
      const other = await tenantWithType()
      const theirs = (await events(other.owner))[0]
      for (const id of [theirs.id, randomUUID(), 'not-a-uuid']) {
        const res = await owner.get(`/v1/audit/events/${id}/proof`)
        assert.equal(res.status, 404, id)
        assert.equal(res.body.error.code, 'NOT_FOUND')
      }
    })

    it('answers 403 for a viewer', async () => {
      const { tenant, owner } = await tenantWithType()
      const [e] = await events(owner)
      assert.equal((await s.as(tenant, ['viewer']).get(`/v1/audit/events/${e.id}/proof`)).status, 403)
    })
  })

  it('declares both routes in /openapi/v1.json', async () => {
    const doc = await s.request('GET', '/openapi/v1.json')
    assert.equal(doc.status, 200)
    assert.ok(doc.body.paths['/v1/audit/events']?.get)
    assert.ok(doc.body.paths['/v1/audit/events/{id}/proof']?.get)
  })
})
