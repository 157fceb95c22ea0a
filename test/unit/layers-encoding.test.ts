import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { gunzipSync } from 'node:zlib'
import { acceptsGzip, encodeRendering } from '../../lib/layers/encoding.js'

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
})
