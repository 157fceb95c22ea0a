import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { newTenant, publishedType, flushAudit, useOwnerSession } from '../support/harness.js'

describe('relations API', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'rel', type: true })
  const obj = async (name = 'o'): Promise<string> => {
    const r = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, attributes: { name } })
    assert.equal(r.status, 201, r.text)
    return r.body.id
  }

  describe('POST /v1/relations', () => {
    it('creates a relation with defaults and answers its shape with Location', async () => {
      const [a, b] = [await obj(), await obj()]
      const r = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'feeds' })
      assert.equal(r.status, 201, r.text)
      assert.deepEqual(Object.keys(r.body).sort(), ['createdAt', 'deletedAt', 'fromObjectId', 'id', 'inheritsGeometry', 'metadata', 'relationType', 'toObjectId', 'updatedAt'])
      assert.deepEqual(r.body.metadata, {})
      assert.equal(r.body.inheritsGeometry, false)
      assert.equal(r.body.deletedAt, null)
      assert.match(r.body.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      assert.equal(r.headers.get('location'), `/v1/relations/${r.body.id}`)
      const got = await ctx.owner.get(`/v1/relations/${r.body.id}`)
      assert.deepEqual(got.body, r.body)
    })

    it('answers 400 naming fromObjectId or toObjectId when that object is missing', async () => {
      const a = await obj()
      const missing = randomUUID()
      const r1 = await ctx.owner.post('/v1/relations', { fromObjectId: missing, toObjectId: a, relationType: 'x' })
      assert.equal(r1.status, 400)
      assert.equal(r1.body.error.details.field, 'fromObjectId')
      const r2 = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: missing, relationType: 'x' })
      assert.equal(r2.status, 400)
      assert.equal(r2.body.error.details.field, 'toObjectId')
    })

    it('does not link to an object of another tenant', async () => {
      const other = ctx.s.as(newTenant('rel-other'), ['owner'])
      const otherType = await publishedType(other)
      const foreign = await other.post('/v1/objects', { typeId: otherType, attributes: {} })
      const r = await ctx.owner.post('/v1/relations', { fromObjectId: await obj(), toObjectId: foreign.body.id, relationType: 'x' })
      assert.equal(r.status, 400)
      assert.equal(r.body.error.details.field, 'toObjectId')
    })

    it('answers 400 on a self-link, a missing relationType and unknown fields', async () => {
      const a = await obj()
      const self = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: a, relationType: 'x' })
      assert.equal(self.status, 400)
      assert.equal(self.body.error.details.field, 'toObjectId')
      const missing = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: await obj() })
      assert.equal(missing.status, 400)
      assert.equal(missing.body.error.details.field, 'relationType')
      const extra = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: await obj(), relationType: 'x', weight: 1 })
      assert.equal(extra.status, 400)
      assert.equal(extra.body.error.details.field, 'weight')
    })

    it('answers 400, not 500, for NUL characters in relationType or metadata', async () => {
      const [a, b] = [await obj(), await obj()]
      const r1 = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'x\u0000y' })
      assert.equal(r1.status, 400)
      const r2 = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'x', metadata: { k: 'a\u0000' } })
      assert.equal(r2.status, 400)
      assert.equal(r2.body.error.details.field, 'metadata.k')
    })

    it('answers 400 for metadata the database cannot hold exactly: 1e400, or nesting past 64 levels', async () => {
      const [a, b] = [await obj(), await obj()]
      const inf = await ctx.s.request('POST', '/v1/relations', {
        token: ctx.owner.token,
        raw: `{"fromObjectId":"${a}","toObjectId":"${b}","relationType":"x","metadata":{"w":1e400}}`,
        headers: { 'Content-Type': 'application/json' }
      })
      assert.equal(inf.status, 400)
      assert.equal(inf.body.error.details.field, 'metadata.w')
      let deep: unknown = 1
      for (let i = 0; i < 100; i++) deep = { d: deep }
      const nested = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'x', metadata: deep })
      assert.equal(nested.status, 400)
      assert.match(nested.body.error.details.reason, /nests deeper than 64/)
      const [{ n }] = (await ctx.s.db.raw('SELECT count(*)::int AS n FROM relations WHERE from_object_id = ?', [a])).rows
      assert.equal(n, 0)
    })

    it('answers 409 CONFLICT on an identical active link, but allows another type or direction', async () => {
      const [a, b] = [await obj(), await obj()]
      const first = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'feeds' })
      const dup = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'feeds', metadata: { x: 1 } })
      assert.equal(dup.status, 409)
      assert.equal(dup.body.error.code, 'CONFLICT')
      assert.equal(dup.body.error.details.existingId, first.body.id)
      assert.equal((await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'owns' })).status, 201)
      assert.equal((await ctx.owner.post('/v1/relations', { fromObjectId: b, toObjectId: a, relationType: 'feeds' })).status, 201)
    })

    it('writes audit relation.created and outbox relation.created in the same transaction', async () => {
      const r = await ctx.owner.post('/v1/relations', { fromObjectId: await obj(), toObjectId: await obj(), relationType: 'audited', metadata: { k: 1 } })
      await flushAudit(ctx.s.db, ctx.tenant)
      const audit = await ctx.s.db('audit_events').where({ tenant_id: ctx.tenant, resource_id: r.body.id })
      assert.deepEqual(audit.map(e => e.type), ['relation.created'])
      const events = await ctx.s.db('outbox_events').where({ tenant_id: ctx.tenant, aggregate_id: r.body.id })
      assert.equal(events.length, 1)
      assert.equal(events[0].type, 'relation.created')
      assert.deepEqual(events[0].payload.relation, r.body)
    })

    it('leaves nothing behind when refused (no row, no audit, no outbox)', async () => {
      const t = newTenant('rel-refused')
      const c = ctx.s.as(t, ['owner'])
      const tt = await publishedType(c)
      const a = await c.post('/v1/objects', { typeId: tt, attributes: {} })
      const r = await c.post('/v1/relations', { fromObjectId: a.body.id, toObjectId: randomUUID(), relationType: 'x' })
      assert.equal(r.status, 400)
      assert.equal((await ctx.s.db('relations').where({ tenant_id: t })).length, 0)
      assert.equal((await ctx.s.db('outbox_events').where({ tenant_id: t, aggregate_type: 'relation' })).length, 0)
    })

    it('needs relations:write (viewer gets 403, operator may write)', async () => {
      const [a, b] = [await obj(), await obj()]
      const viewer = ctx.s.as(ctx.tenant, ['viewer'])
      assert.equal((await viewer.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'v' })).status, 403)
      assert.equal((await viewer.get('/v1/relations')).status, 200)
      assert.equal((await ctx.s.as(ctx.tenant, ['operator']).post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'v' })).status, 201)
    })
  })

  describe('PATCH, DELETE and restore', () => {
    it('patches metadata as a merge patch, relationType and inheritsGeometry; audits relation.updated', async () => {
      const r = await ctx.owner.post('/v1/relations', { fromObjectId: await obj(), toObjectId: await obj(), relationType: 'a', metadata: { keep: 1, drop: 2 } })
      const p = await ctx.owner.patch(`/v1/relations/${r.body.id}`, { metadata: { drop: null, add: 'x' }, relationType: 'b', inheritsGeometry: true })
      assert.equal(p.status, 200, p.text)
      assert.deepEqual(p.body.metadata, { keep: 1, add: 'x' })
      assert.equal(p.body.relationType, 'b')
      assert.equal(p.body.inheritsGeometry, true)
      const events = await ctx.s.db('outbox_events').where({ tenant_id: ctx.tenant, aggregate_id: r.body.id }).orderBy('position')
      assert.deepEqual(events.map(e => e.type), ['relation.created', 'relation.updated'])
    })

    it('reads a PATCH sent as application/merge-patch+json as it reads application/json', async () => {
      const r = await ctx.owner.post('/v1/relations', { fromObjectId: await obj(), toObjectId: await obj(), relationType: 'mp', metadata: { keep: 1, drop: 2 } })
      const p = await ctx.owner.patch(`/v1/relations/${r.body.id}`, { metadata: { drop: null, add: 'x' } }, { 'Content-Type': 'application/merge-patch+json' })
      assert.equal(p.status, 200, p.text)
      assert.deepEqual(p.body.metadata, { keep: 1, add: 'x' })
      assert.deepEqual((await ctx.owner.get(`/v1/relations/${r.body.id}`)).body.metadata, { keep: 1, add: 'x' })
    })

    it('answers 409 when a new relationType would duplicate an active link, 400 on an empty patch or a from change', async () => {
      const [a, b] = [await obj(), await obj()]
      await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'one' })
      const two = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'two' })
      assert.equal((await ctx.owner.patch(`/v1/relations/${two.body.id}`, { relationType: 'one' })).status, 409)
      assert.equal((await ctx.owner.patch(`/v1/relations/${two.body.id}`, {})).status, 400)
      const from = await ctx.owner.patch(`/v1/relations/${two.body.id}`, { fromObjectId: b })
      assert.equal(from.status, 400)
      assert.equal(from.body.error.details.field, 'fromObjectId')
    })

    it('soft-deletes: 204, kept with deletedAt, hidden from lists unless includeDeleted, then restores', async () => {
      const [a, b] = [await obj(), await obj()]
      const r = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'soft' })
      assert.equal((await ctx.owner.delete(`/v1/relations/${r.body.id}`)).status, 204)
      assert.equal((await ctx.owner.delete(`/v1/relations/${r.body.id}`)).status, 404)
      assert.equal((await ctx.owner.patch(`/v1/relations/${r.body.id}`, { metadata: {} })).status, 404)
      const got = await ctx.owner.get(`/v1/relations/${r.body.id}`)
      assert.match(got.body.deletedAt, /Z$/)
      assert.equal((await ctx.owner.get(`/v1/relations?fromObjectId=${a}`)).body.pagination.total, 0)
      const withDeleted = await ctx.owner.get(`/v1/relations?fromObjectId=${a}&includeDeleted=true`)
      assert.deepEqual(withDeleted.body.items.map((x: { id: string }) => x.id), [r.body.id])
      const restored = await ctx.owner.post(`/v1/relations/${r.body.id}/restore`)
      assert.equal(restored.status, 200, restored.text)
      assert.equal(restored.body.deletedAt, null)
      assert.equal((await ctx.owner.get(`/v1/relations?fromObjectId=${a}`)).body.pagination.total, 1)
      const again = await ctx.owner.post(`/v1/relations/${r.body.id}/restore`)
      assert.equal(again.status, 200)
      await flushAudit(ctx.s.db, ctx.tenant)
      const audit = await ctx.s.db('audit_events').where({ tenant_id: ctx.tenant, resource_id: r.body.id }).orderBy('sequence')
      assert.deepEqual(audit.map(e => e.type), ['relation.created', 'relation.deleted', 'relation.restored'])
      const events = await ctx.s.db('outbox_events').where({ tenant_id: ctx.tenant, aggregate_id: r.body.id }).orderBy('position')
      assert.deepEqual(events.map(e => [e.type, e.payload.restored ?? false]), [['relation.created', false], ['relation.deleted', false], ['relation.created', true]])
    })

    it('answers 409 on restore when an identical link became active meanwhile, or an end object was deleted', async () => {
      const [a, b] = [await obj(), await obj()]
      const r = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'twin' })
      await ctx.owner.delete(`/v1/relations/${r.body.id}`)
      const twin = await ctx.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'twin' })
      assert.equal(twin.status, 201)
      const res = await ctx.owner.post(`/v1/relations/${r.body.id}/restore`)
      assert.equal(res.status, 409)
      assert.equal(res.body.error.details.existingId, twin.body.id)
      await ctx.owner.delete(`/v1/relations/${twin.body.id}`)
      assert.equal((await ctx.owner.delete(`/v1/objects/${b}`)).status, 204)
      const gone = await ctx.owner.post(`/v1/relations/${r.body.id}/restore`)
      assert.equal(gone.status, 409)
      assert.equal(gone.body.error.details.field, 'toObjectId')
    })

    it('answers 404 for unknown or malformed ids and for another tenant\'s relation', async () => {
      assert.equal((await ctx.owner.get(`/v1/relations/${randomUUID()}`)).status, 404)
      assert.equal((await ctx.owner.get('/v1/relations/not-a-uuid')).status, 404)
      const r = await ctx.owner.post('/v1/relations', { fromObjectId: await obj(), toObjectId: await obj(), relationType: 'mine' })
      const stranger = ctx.s.as(newTenant('rel-stranger'), ['owner'])
      assert.equal((await stranger.get(`/v1/relations/${r.body.id}`)).status, 404)
      assert.equal((await stranger.delete(`/v1/relations/${r.body.id}`)).status, 404)
      assert.equal((await stranger.post(`/v1/relations/${r.body.id}/restore`)).status, 404)
    })
  })

  describe('GET /v1/relations', () => {
    let hub: string
    let ids: Record<string, string>
    before(async () => {
      hub = await obj('hub')
      const [x, y, z] = [await obj(), await obj(), await obj()]
      ids = {}
      const mk = async (key: string, from: string, to: string, relationType: string, metadata: object) => {
        const r = await ctx.owner.post('/v1/relations', { fromObjectId: from, toObjectId: to, relationType, metadata })
        assert.equal(r.status, 201, r.text)
        ids[key] = r.body.id
      }
      await mk('hx', hub, x, 'pipe', { priority: 2, status: 'open', flag: true, nested: { k: 'deep' } })
      await mk('hy', hub, y, 'pipe', { priority: '2', status: 'closed' })
      await mk('hz', hub, z, 'cable', { priority: 3, obj: { a: 1 } })
      await mk('zh', z, hub, 'pipe', { priority: 2 })
    })

    it('filters by fromObjectId, toObjectId and relationType combined with AND', async () => {
      const r = await ctx.owner.get(`/v1/relations?fromObjectId=${hub}&relationType=pipe`)
      assert.deepEqual(r.body.items.map((x: { id: string }) => x.id), [ids.hx, ids.hy])
      const to = await ctx.owner.get(`/v1/relations?toObjectId=${hub}`)
      assert.deepEqual(to.body.items.map((x: { id: string }) => x.id), [ids.zh])
    })

    it('filters metadata.<key> on the JSON scalar text, nested keys by dots, ANDed', async () => {
      const two = await ctx.owner.get(`/v1/relations?fromObjectId=${hub}&metadata.priority=2`)
      assert.deepEqual(two.body.items.map((x: { id: string }) => x.id), [ids.hx, ids.hy])
      const both = await ctx.owner.get(`/v1/relations?fromObjectId=${hub}&metadata.priority=2&metadata.status=open`)
      assert.deepEqual(both.body.items.map((x: { id: string }) => x.id), [ids.hx])
      assert.equal((await ctx.owner.get(`/v1/relations?metadata.flag=true&fromObjectId=${hub}`)).body.items[0].id, ids.hx)
      assert.equal((await ctx.owner.get(`/v1/relations?metadata.nested.k=deep`)).body.items[0].id, ids.hx)
      assert.equal((await ctx.owner.get(`/v1/relations?metadata.obj=${encodeURIComponent('{"a":1}')}`)).body.pagination.total, 0)
    })

    it('matches metadata.<key>=null on a JSON null, whose text is null (also the string "null"), never on a missing key', async () => {
      const [n, m, k] = [await obj(), await obj(), await obj()]
      let i = 0
      const mk = async (to: string, metadata: object) => {
        const r = await ctx.owner.post('/v1/relations', { fromObjectId: n, toObjectId: to, relationType: `nul${i++}`, metadata })
        assert.equal(r.status, 201, r.text)
        return r.body.id as string
      }
      const jsonNull = await mk(m, { nul: null, deep: { nul: null } })
      const text = await mk(m, { nul: 'null' })
      await mk(m, {})
      await mk(k, { nul: { inner: null } })
      await mk(k, { nul: [null] })
      const zero = await mk(k, { nul: 0, deep: { other: null } })
      const found = async (q: string) => (await ctx.owner.get(`/v1/relations?fromObjectId=${n}&${q}`)).body.items.map((x: { id: string }) => x.id)
      assert.deepEqual(await found('metadata.nul=null'), [jsonNull, text])
      assert.deepEqual(await found('metadata.deep.nul=null'), [jsonNull])
      assert.deepEqual(await found('metadata.missing=null'), [])
      assert.deepEqual(await found(`metadata.nul=null&toObjectId=${k}`), [], 'objects and arrays holding null never match')
      // Other scalars as before.
      assert.deepEqual(await found('metadata.nul=0'), [zero])
      assert.deepEqual(await found('metadata.nul=NULL'), [])
    })

    it('treats SQL metacharacters in metadata keys and values as data', async () => {
      const r = await ctx.owner.get(`/v1/relations?${encodeURIComponent("metadata.x'; DROP TABLE relations;--")}=${encodeURIComponent("' OR 1=1 --")}`)
      assert.equal(r.status, 200)
      assert.equal(r.body.pagination.total, 0)
    })

    it('pages with the envelope and answers 400 on bad parameters', async () => {
      const r = await ctx.owner.get(`/v1/relations?fromObjectId=${hub}&limit=1&offset=1`)
      assert.deepEqual(r.body.pagination, { limit: 1, offset: 1, total: 3, hasMore: true })
      assert.equal((await ctx.owner.get('/v1/relations?limit=0')).status, 400)
      assert.equal((await ctx.owner.get('/v1/relations?fromObjectId=nope')).status, 400)
      assert.equal((await ctx.owner.get('/v1/relations?unknown=1')).status, 400)
      assert.equal((await ctx.owner.get('/v1/relations?metadata.=1')).status, 400)
      assert.equal((await ctx.owner.get('/v1/relations?relationType=a%00b')).status, 400)
    })

    it('GET /v1/objects/:objectId/relations follows direction (default all)', async () => {
      const all = await ctx.owner.get(`/v1/objects/${hub}/relations`)
      assert.equal(all.status, 200, all.text)
      assert.deepEqual(all.body.items.map((x: { id: string }) => x.id), [ids.hx, ids.hy, ids.hz, ids.zh])
      const out = await ctx.owner.get(`/v1/objects/${hub}/relations?direction=outgoing`)
      assert.deepEqual(out.body.items.map((x: { id: string }) => x.id), [ids.hx, ids.hy, ids.hz])
      const inc = await ctx.owner.get(`/v1/objects/${hub}/relations?direction=incoming&relationType=pipe`)
      assert.deepEqual(inc.body.items.map((x: { id: string }) => x.id), [ids.zh])
      assert.equal((await ctx.owner.get(`/v1/objects/${hub}/relations?direction=sideways`)).status, 400)
      assert.equal((await ctx.owner.get(`/v1/objects/${randomUUID()}/relations`)).status, 404)
    })
  })

  it('lists the relation paths in /openapi/v1.json', async () => {
    const doc = (await ctx.s.request('GET', '/openapi/v1.json')).body
    for (const p of ['/v1/relations', '/v1/relations/{id}', '/v1/relations/{id}/restore', '/v1/objects/{objectId}/relations']) assert.ok(doc.paths[p], p)
    assert.ok(doc.paths['/v1/relations/{id}'].patch)
    assert.ok(doc.paths['/v1/relations/{id}'].delete)
  })
})
