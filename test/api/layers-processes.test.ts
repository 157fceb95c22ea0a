import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { newTenant, publishedType, startServer, type Client, type TestServer } from '../support/harness.js'

// Two API processes (two apps, two pools and settings feeds: they see each other only through
// PostgreSQL). A warm export costs no database round trip; an object or layer write through
// one process changes what the other serves, by the NOTIFY lib/layers sends after the commit
// (its in-process values would otherwise live 5 s, longer than any wait here).

/** Queries `s` runs while `fn` runs (knex's query events on its pool). */
async function queriesDuring (s: TestServer, fn: () => Promise<void>): Promise<string[]> {
  const seen: string[] = []
  const listener = (q: { sql?: string }) => { seen.push(q.sql ?? '') }
  s.db.on('query', listener)
  try { await fn() } finally { s.db.off('query', listener) }
  return seen
}

/** Polls `read` until it differs from `old`, for at most `ms`; returns what it read last. */
async function changed<T> (old: T, read: () => Promise<T>, ms = 1500): Promise<T> {
  const deadline = Date.now() + ms
  let v = await read()
  while (v === old && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 10))
    v = await read()
  }
  return v
}

describe('layer exports across two API processes', () => {
  let a: TestServer
  let b: TestServer
  let viaA: Client
  let viaB: Client
  let typeId = ''
  let obj = ''
  const tile = '/v1/layers/tiles/shared/10/550/335'
  const etag = async (c: Client, path: string) => {
    const r = await c.get(path)
    assert.equal(r.status, 200, `${path}: ${r.text}`)
    return r.headers.get('etag')
  }

  before(async () => {
    [a, b] = await Promise.all([startServer(), startServer()])
    const tenant = newTenant('lyrp')
    viaA = a.as(tenant, ['owner'])
    viaB = b.as(tenant, ['owner'])
    typeId = await publishedType(viaA)
    const r = await viaA.post('/v1/objects', { typeId, attributes: { name: 'one' }, geometry: { type: 'Point', coordinates: [13.4, 52.5] } })
    assert.equal(r.status, 201, r.text)
    obj = r.body.id
    assert.equal((await viaA.post('/v1/layers/definitions', { name: 'Shared', slug: 'shared', cacheTtlSeconds: 120, definition: { filters: { typeId } } })).status, 201)
  })
  after(async () => { await Promise.all([a?.close(), b?.close()]) })

  it('serves a warm tile and its 304 without a database round trip', async () => {
    // The setup's writes are announced to B within milliseconds, or later on a loaded machine: a
    // late announcement drops B's warm value once. Warm again then; a cache that never holds fails.
    let sent: string[] = []
    for (let attempt = 0; attempt < 5; attempt++) {
      const first = await viaB.get(tile)
      assert.equal(first.status, 200)
      const tag = first.headers.get('etag') ?? ''
      sent = await queriesDuring(b, async () => {
        assert.equal((await viaB.get(tile)).status, 200)
        assert.equal((await viaB.get(tile, { 'If-None-Match': tag })).status, 304)
      })
      if (sent.length === 0) break
      await new Promise(resolve => setTimeout(resolve, 300))
    }
    assert.deepEqual(sent, [])
  })

  it('serves the new ETag in the other process after an object edit commits', async () => {
    const before = await etag(viaB, tile)
    const gjBefore = await etag(viaB, '/v1/layers/objects?layer=shared')
    const cur = (await viaA.get(`/v1/objects/${obj}`)).body
    assert.equal((await viaA.patch(`/v1/objects/${obj}`, { attributes: { name: 'two' } }, { 'If-Match': `"${cur.version}"` })).status, 200)
    // The writing process: at once (its own write dropped its values before answering).
    assert.notEqual(await etag(viaA, tile), before)
    // The other: as soon as the notification arrives, and then the same ETag as the writer's.
    const after = await changed(before, () => etag(viaB, tile))
    assert.notEqual(after, before)
    assert.equal(after, await etag(viaA, tile))
    const gj = await viaB.get('/v1/layers/objects?layer=shared', { 'If-None-Match': gjBefore ?? '' })
    assert.equal(gj.status, 200)
    assert.equal(gj.body.features[0].properties.attributes.name, 'two')
  })

  it('follows a layer definition change and a delete made through the other process', async () => {
    const before = await etag(viaB, tile)
    assert.equal((await viaA.patch('/v1/layers/definitions/shared', { definition: { filters: { typeId }, fields: ['attributes.name'] } })).status, 200)
    assert.notEqual(await changed(before, () => etag(viaB, tile)), before)
    assert.equal((await viaA.delete('/v1/layers/definitions/shared')).status, 204)
    const status = await changed(200, async () => (await viaB.get(tile)).status)
    assert.equal(status, 404)
  })
})
