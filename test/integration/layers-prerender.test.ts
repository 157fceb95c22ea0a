import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { gunzipSync } from 'node:zlib'
import type { JobSender } from '../../lib/context.js'
import * as layers from '../../lib/layers/index.js'
import { newTenant, publishedType, serviceContext, startServer, type TestServer } from '../support/harness.js'

describe('tiles.prerender', () => {
  let s: TestServer
  before(async () => { s = await startServer() })
  after(() => s.close())

  it('renders the low zooms over the layer\'s extent into the cache, under the keys requests use', async () => {
    const tenant = newTenant('lyrpre')
    const owner = s.as(tenant, ['owner'])
    const typeId = await publishedType(owner)
    assert.equal((await owner.post('/v1/objects', { typeId, geometry: { type: 'Point', coordinates: [13.4, 52.5] } })).status, 201)
    const layer = (await owner.post('/v1/layers/definitions', { name: 'P', slug: 'pre', definition: { filters: { typeId } } })).body
    const kept = new Map<string, layers.Rendering>()
    const inner = layers.memoryCache()
    const cache: layers.RenderCache = { kind: 'memory', get: (k, e) => inner.get(k, e), async set (k, v, ttl) { kept.set(k, v); await inner.set(k, v, ttl) } }
    const n = await layers.prerenderLayer(serviceContext(s.db, tenant, ['viewer']), cache, layer.id)
    assert.equal(n, 1 + 1 + 1 + 1) // one tile per zoom 0..3 holds a single point
    assert.equal(kept.size, 4)
    assert.ok([...kept.values()].every(t => t.identity.length > 0))
    // Kept gzip-compressed too (encoding.ts): the gzip coding is the same tile.
    assert.ok([...kept.values()].every(t => gunzipSync(t.gzip).equals(t.identity)))
    assert.ok([...kept.keys()].every(k => k.startsWith(`layers:${tenant}:`)))
  })

  it('queues one prerender per layer that may hold the changed object\'s type', async () => {
    const tenant = newTenant('lyrpre2')
    const owner = s.as(tenant, ['owner'])
    const [t1, t2] = [await publishedType(owner), await publishedType(owner)]
    const a = (await owner.post('/v1/layers/definitions', { name: 'A', slug: 'a', definition: { filters: { typeId: t1 } } })).body
    const any = (await owner.post('/v1/layers/definitions', { name: 'Any', slug: 'any' })).body
    assert.equal((await owner.post('/v1/layers/definitions', { name: 'B', slug: 'b', definition: { filters: { typeId: t2 } } })).status, 201)
    const sent: Array<{ queue: string, payload: object, key?: string }> = []
    const jobs: JobSender = { async send (queue, payload, opts) { sent.push({ queue, payload, key: opts.singletonKey }) } }
    await layers.prerenderOnObjectEvents(s.db, jobs)({ tenant_id: tenant, type: 'object.updated', payload: { object: { typeId: t1 } } })
    assert.deepEqual(sent.map(x => x.key).sort(), [`${tenant}:${a.id}`, `${tenant}:${any.id}`].sort())
    assert.ok(sent.every(x => x.queue === 'tiles.prerender'))
    sent.length = 0
    await layers.prerenderOnObjectEvents(s.db, jobs)({ tenant_id: tenant, type: 'layer.updated', payload: { layer: { id: a.id } } })
    await layers.prerenderOnObjectEvents(s.db, jobs)({ tenant_id: tenant, type: 'relation.created', payload: {} })
    assert.deepEqual(sent.map(x => x.key), [`${tenant}:${a.id}`])
    // A claim's events at once: one job per layer, however many of its events touch it.
    sent.length = 0
    const consumer = layers.prerenderOnObjectEvents(s.db, jobs)
    await s.db.transaction(tx => consumer.batch([
      { tenant_id: tenant, type: 'object.created', payload: { object: { typeId: t1 } } },
      { tenant_id: tenant, type: 'object.updated', payload: { object: { typeId: t1 } } },
      { tenant_id: tenant, type: 'layer.updated', payload: { layer: { id: a.id } } }
    ], tx))
    assert.deepEqual(sent.map(x => x.key).sort(), [`${tenant}:${a.id}`, `${tenant}:${any.id}`].sort())
  })

  it('reads and sends on the outbox claim\'s transaction when given one (embedded mode has one connection)', async () => {
    const tenant = newTenant('lyrpre3')
    const owner = s.as(tenant, ['owner'])
    const t1 = await publishedType(owner)
    const a = (await owner.post('/v1/layers/definitions', { name: 'A', slug: 'a', definition: { filters: { typeId: t1 } } })).body
    const b = (await owner.post('/v1/layers/definitions', { name: 'B', slug: 'b', definition: { filters: { typeId: t1 } } })).body
    const sent: Array<{ key?: string, db: unknown }> = []
    const jobs: JobSender = { async send (_queue, _payload, opts) { sent.push({ key: opts.singletonKey, db: opts.db }) } }
    let claim: unknown = null
    // B deleted in the claim's (rolled back) transaction: only a read through it misses B.
    await assert.rejects(s.db.transaction(async tx => {
      claim = tx
      await tx('layers').where({ tenant_id: tenant, id: b.id }).del()
      await layers.prerenderOnObjectEvents(s.db, jobs)({ tenant_id: tenant, type: 'object.created', payload: { object: { typeId: t1 } } }, tx)
      throw new Error('roll back')
    }), /roll back/)
    assert.deepEqual(sent.map(x => x.key), [`${tenant}:${a.id}`])
    assert.equal(sent[0].db, claim)
  })
})
