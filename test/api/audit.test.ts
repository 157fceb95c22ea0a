import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startServer, newTenant, publishedType, token, type TestServer, type Client } from '../support/harness.js'
import { hexes, leafOf, mth, verifyConsistency, verifyInclusion, verifyTreeHead } from '../support/rfc9162.js'

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
    it('lists a just-written event at once, newest first, in the documented shape', async () => {
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

  describe('Merkle tree: GET /v1/audit/tree-head, /v1/audit/events/:id/inclusion-proof, /v1/audit/consistency-proof', () => {
    /** A tenant whose chain holds `n` object writes (plus the type's events), all answered. */
    async function tenantWithWrites (n: number): Promise<{ tenant: string, owner: Client, typeId: string, items: Event[] }> {
      const t = await tenantWithType()
      for (let i = 0; i < n; i++) assert.equal((await t.owner.post('/v1/objects', { typeId: t.typeId, attributes: { name: `o${i}` } })).status, 201)
      return { ...t, items: (await events(t.owner)).reverse() }
    }
    const leavesOf = (items: Event[]) => items.map(e => Buffer.from(e.hash, 'hex'))

    it('signs a head over every answered write, verifiable with the published key', async () => {
      const { tenant, owner, items } = await tenantWithWrites(3)
      const res = await owner.get('/v1/audit/tree-head')
      assert.equal(res.status, 200, res.text)
      assert.deepEqual(Object.keys(res.body).sort(), ['algorithm', 'keyId', 'publicKey', 'rootHash', 'signature', 'tenant', 'timestamp', 'treeSize'])
      assert.equal(res.body.tenant, tenant)
      assert.equal(res.body.treeSize, items.length)
      assert.equal(res.body.rootHash, mth(leavesOf(items)).toString('hex'))
      assert.equal(res.body.algorithm, 'Ed25519')
      assert.ok(Math.abs(res.body.timestamp - Date.now()) < 60_000)
      assert.ok(verifyTreeHead(res.body))
      assert.equal(verifyTreeHead({ ...res.body, rootHash: '0'.repeat(64) }), false)
    })

    it('proves an event\'s inclusion in the current tree and in an older one', async () => {
      const { owner, items } = await tenantWithWrites(4)
      const target = items[2]
      for (const q of ['', `?treeSize=${target.sequence}`, `?treeSize=${items.length - 1}`]) {
        const res = await owner.get(`/v1/audit/events/${target.id}/inclusion-proof${q}`)
        assert.equal(res.status, 200, res.text)
        const n = res.body.treeSize
        assert.equal(n, q === '' ? items.length : Number(q.split('=')[1]))
        assert.equal(res.body.leafIndex, target.sequence - 1)
        assert.equal(res.body.leafHash, leafOf(target.hash).toString('hex'))
        const root = mth(leavesOf(items.slice(0, n)))
        assert.equal(res.body.rootHash, root.toString('hex'))
        assert.ok(verifyInclusion(res.body.leafIndex, n, leafOf(target.hash), hexes(res.body.auditPath), root))
        assert.ok(verifyTreeHead(res.body.treeHead))
        assert.deepEqual([res.body.treeHead.treeSize, res.body.treeHead.rootHash], [n, res.body.rootHash])
      }
    })

    it('proves consistency between two sizes, and from a kept head to the current tree', async () => {
      const { owner, typeId, items } = await tenantWithWrites(2)
      const kept = (await owner.get('/v1/audit/tree-head')).body
      assert.equal(kept.treeSize, items.length)
      assert.equal((await owner.post('/v1/objects', { typeId, attributes: {} })).status, 201)
      const later = (await events(owner)).reverse()
      const res = await owner.get(`/v1/audit/consistency-proof?first=${kept.treeSize}`)
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.firstRootHash, kept.rootHash)
      assert.equal(res.body.secondSize, later.length)
      assert.ok(verifyConsistency(kept.treeSize, res.body.secondSize, Buffer.from(kept.rootHash, 'hex'), mth(leavesOf(later)), hexes(res.body.proof)))
      const pair = await owner.get('/v1/audit/consistency-proof?first=1&second=2')
      assert.equal(pair.status, 200, pair.text)
      assert.ok(verifyConsistency(1, 2, mth(leavesOf(later.slice(0, 1))), mth(leavesOf(later.slice(0, 2))), hexes(pair.body.proof)))
    })

    it('answers 400 for sizes out of range or missing, 404 for another tenant\'s event, 403 for a viewer', async () => {
      const { tenant, owner, items } = await tenantWithWrites(1)
      const other = await tenantWithWrites(1)
      const cases: Array<[string, number, string]> = [
        [`/v1/audit/events/${items[1].id}/inclusion-proof?treeSize=1`, 400, 'VALIDATION_ERROR'],
        [`/v1/audit/events/${items[1].id}/inclusion-proof?treeSize=${items.length + 1}`, 400, 'VALIDATION_ERROR'],
        [`/v1/audit/events/${items[1].id}/inclusion-proof?treeSize=zero`, 400, 'VALIDATION_ERROR'],
        ['/v1/audit/consistency-proof', 400, 'VALIDATION_ERROR'],
        ['/v1/audit/consistency-proof?first=0', 400, 'VALIDATION_ERROR'],
        [`/v1/audit/consistency-proof?first=2&second=${items.length + 1}`, 400, 'VALIDATION_ERROR'],
        ['/v1/audit/consistency-proof?first=2&second=1', 400, 'VALIDATION_ERROR'],
        [`/v1/audit/events/${other.items[0].id}/inclusion-proof`, 404, 'NOT_FOUND'],
        [`/v1/audit/events/${randomUUID()}/inclusion-proof`, 404, 'NOT_FOUND'],
        [`/v1/audit/tree-head?tenant=${other.tenant}`, 403, 'FORBIDDEN']
      ]
      for (const [path, status, code] of cases) {
        const res = await owner.get(path)
        assert.deepEqual([res.status, res.body.error?.code], [status, code], path)
      }
      const viewer = s.as(tenant, ['viewer'])
      for (const path of ['/v1/audit/tree-head', `/v1/audit/events/${items[0].id}/inclusion-proof`, '/v1/audit/consistency-proof?first=1']) {
        assert.equal((await viewer.get(path)).status, 403, path)
      }
      const theirs = (await other.owner.get('/v1/audit/tree-head')).body
      assert.equal(theirs.treeSize, other.items.length, 'each tenant has its own tree')
    })
  })

  it('declares every audit route in /openapi/v1.json', async () => {
    const doc = await s.request('GET', '/openapi/v1.json')
    assert.equal(doc.status, 200)
    for (const p of ['/v1/audit/events', '/v1/audit/events/{id}/proof', '/v1/audit/tree-head', '/v1/audit/events/{id}/inclusion-proof', '/v1/audit/consistency-proof']) {
      assert.ok(doc.body.paths[p]?.get, p)
    }
    assert.deepEqual(doc.body.paths['/v1/audit/consistency-proof'].get.parameters.map((x: { name: string }) => x.name).sort(), ['first', 'second', 'tenant'])
  })
})
