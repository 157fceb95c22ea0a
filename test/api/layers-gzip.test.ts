import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request, type IncomingHttpHeaders } from 'node:http'
import { gunzipSync } from 'node:zlib'
import { VectorTile } from '@mapbox/vector-tile'
import { PbfReader as Pbf } from 'pbf'
import { Redis } from 'ioredis'
import { newTenant, publishedType, startServer, useOwnerSession, type TestServer } from '../support/harness.js'

// Kept exports in two content codings (lib/layers encoding.ts): gzip for clients whose
// Accept-Encoding allows it, identity for the others, each with its own ETag. Requests go by
// node:http, which neither sends Accept-Encoding nor decodes, so each test says what it sends.
// TILE takes the edge (server/http/edge.ts), TILE with its first segment in capitals Koa's router.

const TILE = '/v1/layers/tiles/gz/6/33/22.mvt' // holds 8.5,47.4

interface Raw { status: number, headers: IncomingHttpHeaders, body: Buffer }

function raw (base: string, path: string, headers: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    request(base + path, { headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    }).on('error', reject).end()
  })
}

describe('kept exports in gzip and identity codings', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'gz', type: true })
  const get = (path: string, headers: Record<string, string> = {}, t = ctx.owner.token) => raw(ctx.s.base, path, { Authorization: `Bearer ${t}`, ...headers })
  const GZIP = { 'Accept-Encoding': 'gzip, deflate, br, zstd' } // what Chromium sends

  before(async () => {
    assert.equal((await ctx.owner.post('/v1/layers/definitions', { name: 'Gz', slug: 'gz', cacheTtlSeconds: 300, definition: { filters: { typeId: ctx.typeId }, fields: ['attributes.name'] } })).status, 201)
    assert.equal((await ctx.owner.post('/v1/layers/definitions', { name: 'Cold', slug: 'gzcold', cacheTtlSeconds: 0, definition: { filters: { typeId: ctx.typeId } } })).status, 201)
    assert.equal((await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, attributes: { name: 'zurich' }, geometry: { type: 'Point', coordinates: [8.5, 47.4] } })).status, 201)
  })

  for (const [label, path] of [['edge', TILE], ['Koa route', TILE.replace('/v1/', '/V1/')]] as const) {
    it(`answers gzip to a client that accepts it, decoding to the identity tile (${label})`, async () => {
      const gz = await get(path, GZIP)
      const id = await get(path)
      assert.equal(gz.status, 200)
      assert.equal(id.status, 200)
      assert.equal(gz.headers['content-encoding'], 'gzip')
      assert.equal(id.headers['content-encoding'], undefined)
      assert.equal(gz.headers.vary, 'Authorization, Accept-Encoding')
      assert.equal(id.headers.vary, 'Authorization, Accept-Encoding')
      assert.equal(Number(gz.headers['content-length']), gz.body.length)
      assert.ok(id.body.length > 0)
      assert.ok(gunzipSync(gz.body).equals(id.body))
      const layer = new VectorTile(new Pbf(gunzipSync(gz.body))).layers.gz
      assert.equal(layer.length, 1)
      assert.equal(layer.feature(0).properties['attributes.name'], 'zurich')
    })
  }

  it('answers identity when gzip is refused or not offered', async () => {
    for (const ae of ['gzip;q=0', 'identity', 'br', 'deflate, *;q=0', '']) {
      const r = await get(TILE, { 'Accept-Encoding': ae })
      assert.equal(r.status, 200, ae)
      assert.equal(r.headers['content-encoding'], undefined, ae)
    }
    for (const ae of ['GZIP', 'br;q=1, gzip;q=0.5', '*', 'x-gzip']) {
      assert.equal((await get(TILE, { 'Accept-Encoding': ae })).headers['content-encoding'], 'gzip', ae)
    }
  })

  it('gives each coding its own strong ETag, and a 304 only for the coding the client gets', async () => {
    const gz = await get(TILE, GZIP)
    const id = await get(TILE)
    const [gzTag, idTag] = [gz.headers.etag!, id.headers.etag!]
    assert.match(gzTag, /^"[^"]+"$/)
    assert.match(idTag, /^"[^"]+"$/)
    assert.notEqual(gzTag, idTag)
    for (const path of [TILE, TILE.replace('/v1/', '/V1/')]) {
      const gz304 = await get(path, { ...GZIP, 'If-None-Match': gzTag })
      assert.equal(gz304.status, 304, path)
      assert.equal(gz304.headers.etag, gzTag)
      assert.equal(gz304.body.length, 0)
      assert.equal((await get(path, { 'If-None-Match': idTag })).status, 304, path)
      // The other coding's ETag does not validate this one.
      const crossed = await get(path, { 'If-None-Match': gzTag })
      assert.equal(crossed.status, 200, path)
      assert.equal(crossed.headers.etag, idTag)
      assert.equal((await get(path, { ...GZIP, 'If-None-Match': idTag })).status, 200, path)
    }
  })

  it('keeps tenants apart in both codings', async () => {
    const other = ctx.s.as(`${ctx.tenant}-other`, ['owner'])
    assert.equal((await other.post('/v1/layers/definitions', { name: 'Gz', slug: 'gz', cacheTtlSeconds: 300 })).status, 201)
    const mine = await get(TILE, GZIP)
    const theirs = await get(TILE, GZIP, other.token)
    assert.equal(theirs.status, 200)
    assert.equal(gunzipSync(theirs.body).length, 0) // their layer holds nothing there
    assert.ok(gunzipSync(mine.body).length > 0)
    assert.notEqual(theirs.headers.etag, mine.headers.etag)
    assert.equal((await get(TILE, { ...GZIP, 'If-None-Match': mine.headers.etag! }, other.token)).status, 200)
  })

  it('sends identity, with no Vary on Accept-Encoding, for a layer that is not kept (cache off)', async () => {
    const r = await get('/v1/layers/tiles/gzcold/6/33/22.mvt', GZIP)
    assert.equal(r.status, 200)
    assert.equal(r.headers['content-encoding'], undefined)
    assert.equal(r.headers.vary, 'Authorization')
    assert.ok(r.body.length > 0)
  })

  it('compresses the other kept exports alike (GeoJSON, TileJSON)', async () => {
    for (const path of ['/v1/layers/objects?layer=gz', '/v1/layers/tiles/gz.json']) {
      const gz = await get(path, GZIP)
      const id = await get(path)
      assert.equal(gz.headers['content-encoding'], 'gzip', path)
      assert.deepEqual(JSON.parse(gunzipSync(gz.body).toString()), JSON.parse(id.body.toString()), path)
      assert.notEqual(gz.headers.etag, id.headers.etag, path)
    }
  })
})

describe('kept exports in both codings, shared through Redis (REDIS_URL)', () => {
  const servers: TestServer[] = []
  after(async () => { for (const s of servers) await s.close() })

  it('keeps each coding under its own key of the tenant; another API process serves either from Redis', async () => {
    const env = { REDIS_URL: 'redis://127.0.0.1:6379' }
    const a = await startServer(env, { redis: true })
    servers.push(a)
    const b = await startServer(env, { redis: true })
    servers.push(b)
    const tenant = newTenant('gzr')
    const owner = a.as(tenant, ['owner'])
    const typeId = await publishedType(owner)
    assert.equal((await owner.post('/v1/layers/definitions', { name: 'Gz', slug: 'gz', cacheTtlSeconds: 300, definition: { filters: { typeId } } })).status, 201)
    assert.equal((await owner.post('/v1/objects', { typeId, geometry: { type: 'Point', coordinates: [8.5, 47.4] } })).status, 201)
    const h = { Authorization: `Bearer ${owner.token}` }
    const first = await raw(a.base, TILE, { ...h, 'Accept-Encoding': 'gzip' })
    assert.equal(first.headers['content-encoding'], 'gzip')
    const redis = new Redis('redis://127.0.0.1:6379')
    try {
      const keys = await redis.keys(`layers:${tenant}:*`)
      assert.equal(keys.length, 2)
      const gzKey = keys.find(k => k.endsWith(':gz'))!
      assert.ok(keys.includes(gzKey.slice(0, -3)))
      assert.ok((await redis.getBuffer(gzKey))!.equals(first.body))
      // Rendered by A; B (another process, empty of it) answers both codings from Redis.
      const gz = await raw(b.base, TILE, { ...h, 'Accept-Encoding': 'gzip' })
      const id = await raw(b.base, TILE, h)
      assert.ok(gz.body.equals(first.body))
      assert.equal(gz.headers.etag, first.headers.etag)
      assert.ok(gunzipSync(gz.body).equals(id.body))
      assert.ok(id.body.equals((await redis.getBuffer(gzKey.slice(0, -3)))!))
      assert.equal((await redis.keys(`layers:${tenant}:*`)).length, 2) // nothing rendered again
    } finally {
      redis.disconnect()
    }
  })
})
