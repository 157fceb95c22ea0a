import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { gunzipSync } from 'node:zlib'
import { acceptsGzip, encodeRendering } from '../../lib/layers/encoding.js'
import { memoryCache } from '../../lib/layers/cache.js'

describe('lib/layers encoding', () => {
  it('acceptsGzip reads Accept-Encoding with its weights (RFC 9110 12.5.3)', () => {
    for (const h of ['gzip', 'gzip, deflate, br, zstd', 'GZip;q=0.1', 'x-gzip', '*', 'br, *;q=0.5', 'gzip ; q=1.0']) assert.equal(acceptsGzip(h), true, h)
    for (const h of [undefined, '', 'identity', 'br, deflate', 'gzip;q=0', 'gzip;q=0.000', '*;q=0', 'gzip;q=0, *']) assert.equal(acceptsGzip(h), false, String(h))
  })

  it('encodeRendering keeps the identity bytes and a gzip coding of them', async () => {
    const tile = Buffer.from('a vector tile, or anything else'.repeat(50))
    const r = await encodeRendering(tile)
    assert.equal(r.identity, tile)
    assert.ok(r.gzip.length < tile.length)
    assert.ok(gunzipSync(r.gzip).equals(tile))
    assert.ok(gunzipSync((await encodeRendering(Buffer.alloc(0))).gzip).length === 0)
  })

  it('the in-process cache keeps a view of a larger buffer (a tile as read off a socket) as bytes of its own', async () => {
    const read = Buffer.alloc(256 * 1024, 7)
    const tile = read.subarray(1000, 3000)
    const cache = memoryCache()
    await cache.set('k', await encodeRendering(tile), 60)
    const kept = (await cache.get('k', 'identity'))!
    assert.ok(kept.equals(tile))
    assert.equal(kept.buffer.byteLength, tile.length, 'the entry holds its 2,000 bytes, not the 256 KiB read')
    // A small tile and its gzip coding are slices of node's shared pool: kept, they would hold a slab each.
    const small = Buffer.from('a tiny tile')
    assert.ok(small.buffer.byteLength > small.length, 'a pooled buffer')
    await cache.set('s', await encodeRendering(small), 60)
    for (const coding of ['identity', 'gzip'] as const) {
      const b = (await cache.get('s', coding))!
      assert.equal(b.buffer.byteLength, b.length, `the ${coding} coding holds only its own bytes`)
    }
  })
})
