import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { VectorTile, type VectorTileLayer } from '@mapbox/vector-tile'
import { PbfReader as Pbf } from 'pbf'
import { setEngine } from '../../lib/db.js'
import { newTenant, publishedType, startServer, type TestServer } from '../support/harness.js'

// Embedded PGlite has no ST_AsMVT; lib/layers/mvt-js.ts encodes its tiles in JavaScript. Both
// paths run here on the same PostgreSQL data: one app renders with ST_AsMVT, the other's pool is
// marked as lacking it (as embedded mode's start-up probe marks PGlite's), so it renders in
// JavaScript. The decoded tiles must hold the same features, properties and geometry.

type Decoded = Map<string, { type: number, props: Record<string, unknown>, geometry: Array<Array<{ x: number, y: number }>> }>

function decode (bytes: Uint8Array, layerName: string): { layer: VectorTileLayer | undefined, features: Decoded } {
  const tile = new VectorTile(new Pbf(bytes))
  const layer = tile.layers[layerName]
  const features: Decoded = new Map()
  for (let i = 0; i < (layer?.length ?? 0); i++) {
    const f = layer!.feature(i)
    features.set(String(f.properties.id), { type: f.type, props: f.properties, geometry: f.loadGeometry().map(r => r.map(p => ({ x: p.x, y: p.y }))) })
  }
  return { layer, features }
}

function bbox (rings: Array<Array<{ x: number, y: number }>>): number[] {
  const pts = rings.flat()
  return [Math.min(...pts.map(p => p.x)), Math.min(...pts.map(p => p.y)), Math.max(...pts.map(p => p.x)), Math.max(...pts.map(p => p.y))]
}

describe('vector tiles encoded in JavaScript (embedded mode) match ST_AsMVT', () => {
  let sql: TestServer
  let js: TestServer
  const tenant = newTenant('mvtjs')

  before(async () => {
    sql = await startServer()
    js = await startServer()
    setEngine(js.db, { kind: 'postgres', mvt: false, cursors: true })
    const owner = sql.as(tenant, ['owner'])
    const typeId = await publishedType(owner, {
      attributeSchema: { type: 'object', properties: { name: { type: 'string' }, height: { type: 'number' }, tags: { type: 'array' }, ok: { type: 'boolean' } } },
      geometry: { types: ['Point', 'LineString', 'Polygon'] }
    })
    const items: unknown[] = []
    // Points around Berlin (some on z10 tile edges), with every kind of property value.
    for (let i = 0; i < 60; i++) {
      const lon = 13.0 + (i % 10) * 0.09
      const lat = 52.3 + Math.floor(i / 10) * 0.07
      items.push({ typeId, geometry: { type: 'Point', coordinates: [lon, lat] },
        attributes: { name: `p${i}`, height: i % 3 === 0 ? i : i + 0.25, ...(i % 4 === 0 ? { tags: ['a', i] } : {}), ok: i % 2 === 0 } })
    }
    items.push({ typeId, attributes: { name: 'line' }, geometry: { type: 'LineString', coordinates: [[12.9, 52.45], [13.3, 52.52], [13.9, 52.6]] } })
    items.push({ typeId, attributes: { name: 'area', height: 3 }, geometry: { type: 'Polygon', coordinates: [[[13.2, 52.4], [13.6, 52.4], [13.6, 52.6], [13.2, 52.6], [13.2, 52.4]]] } })
    const r = await owner.post('/v1/objects/batch', { items })
    assert.equal(r.status, 201, r.text)
    const l = await owner.post('/v1/layers/definitions', { name: 'Shapes', slug: 'shapes', definition: { filters: { typeId } } })
    assert.equal(l.status, 201, l.text)
  })

  after(async () => {
    await sql?.close()
    await js?.close()
  })

  async function tile (s: TestServer, path: string): Promise<Uint8Array> {
    const res = await fetch(`${s.base}/v1/layers/tiles/shapes/${path}`, { headers: { Authorization: `Bearer ${s.as(tenant, ['owner']).token}` } })
    assert.equal(res.status, 200)
    return new Uint8Array(await res.arrayBuffer())
  }

  for (const path of ['0/0/0', '8/137/83', '10/550/335', '10/549/336', '12/2200/1343', '10/0/0']) {
    it(`tile ${path}: the same features, properties and geometry`, async () => {
      const a = decode(await tile(sql, path), 'shapes')
      const b = decode(await tile(js, path), 'shapes')
      assert.equal(b.layer?.extent, a.layer?.extent)
      assert.equal(b.layer?.version, a.layer?.version)
      assert.deepEqual([...b.features.keys()].sort(), [...a.features.keys()].sort())
      if (path !== '10/0/0') assert.ok(a.features.size > 0, 'the reference tile holds features')
      for (const [id, fa] of a.features) {
        const fb = b.features.get(id)!
        assert.equal(fb.type, fa.type, id)
        assert.deepEqual(fb.props, fa.props, id)
        if (fa.type === 1) {
          // Points: the same pixel (both round to the 4096 grid; allow one unit for rounding).
          assert.equal(fb.geometry.flat().length, fa.geometry.flat().length)
          fa.geometry.flat().forEach((p, i) => {
            const q = fb.geometry.flat()[i]
            assert.ok(Math.abs(p.x - q.x) <= 1 && Math.abs(p.y - q.y) <= 1, `${id}: ${JSON.stringify(p)} vs ${JSON.stringify(q)}`)
          })
        } else {
          // Lines and polygons, clipped to the buffer: the same extent within a pixel or two.
          const ba = bbox(fa.geometry)
          const bb = bbox(fb.geometry)
          ba.forEach((v, i) => assert.ok(Math.abs(v - bb[i]) <= 2, `${id}: bbox ${ba} vs ${bb}`))
        }
      }
    })
  }
})
