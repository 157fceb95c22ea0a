import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { VectorTile } from '@mapbox/vector-tile'
import { PbfReader as Pbf } from 'pbf'
import { newTenant, publishedType, useOwnerSession, type Client } from '../support/harness.js'

async function place (c: Client, typeId: string, lon: number, lat: number, attributes: Record<string, unknown> = {}): Promise<string> {
  const r = await c.post('/v1/objects', { typeId, attributes, geometry: { type: 'Point', coordinates: [lon, lat] } })
  assert.equal(r.status, 201, r.text)
  return r.body.id
}

async function tileOf (c: Client, base: string, path: string): Promise<{ status: number, headers: Headers, bytes: Uint8Array }> {
  const res = await fetch(base + path, { headers: { Authorization: `Bearer ${c.token}` } })
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) }
}

describe('layer definitions', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'lyr', type: true })

  it('creates, reads by id and slug, lists, patches and deletes a layer, with audit', async () => {
    const body = { name: 'Poles', slug: 'poles', definition: { filters: { typeId: ctx.typeId }, fields: ['typeId', 'attributes.name'] }, cacheTtlSeconds: 60 }
    const r = await ctx.owner.post('/v1/layers/definitions', body)
    assert.equal(r.status, 201, r.text)
    assert.equal(r.headers.get('location'), `/v1/layers/definitions/${r.body.id}`)
    assert.equal(r.body.version, 1)
    assert.equal(r.body.cacheTtlSeconds, 60)
    assert.deepEqual(r.body.definition, body.definition)
    assert.deepEqual((await ctx.owner.get('/v1/layers/definitions/poles')).body, r.body)
    assert.deepEqual((await ctx.owner.get(`/v1/layers/definitions/${r.body.id}`)).body, r.body)
    const list = await ctx.owner.get('/v1/layers/definitions')
    assert.equal(list.body.pagination.total, 1)
    const p = await ctx.owner.patch('/v1/layers/definitions/poles', { name: 'Utility poles' })
    assert.equal(p.status, 200, p.text)
    assert.equal(p.body.version, 2)
    assert.equal(p.body.name, 'Utility poles')
    assert.equal(p.body.cacheTtlSeconds, 60)
    const dup = await ctx.owner.post('/v1/layers/definitions', { name: 'x', slug: 'poles' })
    assert.equal(dup.status, 409)
    assert.deepEqual([dup.body.error.details.field, dup.body.error.details.value], ['slug', 'poles'])
    assert.equal((await ctx.owner.delete('/v1/layers/definitions/poles')).status, 204)
    assert.equal((await ctx.owner.get('/v1/layers/definitions/poles')).status, 404)
    const audit = await ctx.s.db('audit_events').where({ tenant_id: ctx.tenant, resource_type: 'layer' }).select('type')
    assert.deepEqual(audit.map(a => a.type).sort(), ['layer.created', 'layer.deleted', 'layer.updated'])
  })

  it('defaults cacheTtlSeconds to LAYER_CACHE_TTL_SECONDS', async () => {
    const r = await ctx.owner.post('/v1/layers/definitions', { name: 'D', slug: 'defaults' })
    assert.equal(r.status, 201, r.text)
    assert.equal(r.body.cacheTtlSeconds, 3600)
  })

  it('answers 400 naming the path of a bad slug, field or filter', async () => {
    const cases: Array<[unknown, string]> = [
      [{ name: 'x', slug: 'Bad Slug' }, 'slug'],
      [{ name: 'x', slug: 'f1', definition: { fields: ['typeId', 'colour'] } }, 'definition.fields[1]'],
      [{ name: 'x', slug: 'f2', definition: { filters: { query: [{ field: 'attributes.h', operator: 'nope', value: 1 }] } } }, 'definition.filters.query[0].operator'],
      [{ name: 'x', slug: 'f3', definition: { filters: { bbox: [10, 10, 5, 5] } } }, 'definition.filters.bbox'],
      [{ name: 'x', slug: 'f4', definition: { filters: { colour: 'red' } } }, 'definition.filters.colour']
    ]
    for (const [body, field] of cases) {
      const r = await ctx.owner.post('/v1/layers/definitions', body)
      assert.equal(r.status, 400, `${field}: ${r.text}`)
      assert.equal(r.body.error.details.field, field, r.text)
    }
  })

  it('answers 400 on definition.filters.typeId unless it names a live type of this tenant, and writes nothing', async () => {
    const stranger = ctx.s.as(newTenant('lyr'), ['owner'])
    const theirs = await publishedType(stranger)
    const gone = await publishedType(ctx.owner)
    assert.equal((await ctx.owner.delete(`/v1/object-types/${gone}`)).status, 204)
    const draft = await ctx.owner.post('/v1/object-types', { key: 'draft_only', name: 'Draft only' })
    assert.equal(draft.status, 201, draft.text)
    const before = await ctx.s.db('layers').where({ tenant_id: ctx.tenant }).count({ n: '*' })
    for (const [what, typeId] of [['unknown', '00000000-0000-4000-8000-000000000000'], ["another tenant's", theirs], ['deleted', gone]]) {
      const r = await ctx.owner.post('/v1/layers/definitions', { name: 'x', slug: 'typed', definition: { filters: { typeId } } })
      assert.equal(r.status, 400, `${what}: ${r.text}`)
      assert.equal(r.body.error.code, 'VALIDATION_ERROR')
      assert.equal(r.body.error.details.field, 'definition.filters.typeId', r.text)
      assert.match(r.body.error.message, /does not exist in this tenant/)
    }
    assert.deepEqual(await ctx.s.db('layers').where({ tenant_id: ctx.tenant }).count({ n: '*' }), before, 'nothing written')
    const l = await ctx.owner.post('/v1/layers/definitions', { name: 'x', slug: 'typed', definition: { filters: { typeId: ctx.typeId } } })
    assert.equal(l.status, 201, l.text)
    const p = await ctx.owner.patch('/v1/layers/definitions/typed', { definition: { filters: { typeId: theirs } } })
    assert.equal(p.status, 400, p.text)
    assert.equal(p.body.error.details.field, 'definition.filters.typeId')
    assert.deepEqual((await ctx.owner.get('/v1/layers/definitions/typed')).body, l.body, 'the PATCH changed nothing')
    const d = await ctx.owner.patch('/v1/layers/definitions/typed', { definition: { filters: { typeId: draft.body.id } } })
    assert.equal(d.status, 200, `a type not yet published is this tenant's: ${d.text}`)
  })

  it('needs layers:write to define and objects:read to export', async () => {
    const viewer = ctx.s.as(ctx.tenant, ['viewer'])
    assert.equal((await viewer.post('/v1/layers/definitions', { name: 'v', slug: 'v' })).status, 403)
    const none = ctx.s.as(ctx.tenant, ['custom-nothing'])
    assert.equal((await none.get('/v1/layers/objects')).status, 403)
  })
})

describe('GET /v1/layers/objects (GeoJSON)', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'lyrgj', type: true })
  let a = ''
  let b = ''
  let otherType = ''
  before(async () => {
    otherType = await publishedType(ctx.owner)
    a = await place(ctx.owner, ctx.typeId, 13.4, 52.5, { name: 'a', height: 9, nested: { colour: 'red', size: 2 } })
    b = await place(ctx.owner, ctx.typeId, 2.35, 48.85, { name: 'b', height: 4 })
    await place(ctx.owner, otherType, 13.41, 52.51, { name: 'other' })
    const r = await ctx.owner.post('/v1/layers/definitions', { name: 'Tall', slug: 'tall', definition: { filters: { typeId: ctx.typeId, query: [{ field: 'attributes.height', operator: 'gt', value: 5 }] } } })
    assert.equal(r.status, 201, r.text)
  })

  it('answers a FeatureCollection of the layer with every field by default', async () => {
    const r = await ctx.owner.get('/v1/layers/objects?layer=tall')
    assert.equal(r.status, 200, r.text)
    assert.match(r.headers.get('content-type') ?? '', /^application\/geo\+json/)
    assert.equal(r.body.type, 'FeatureCollection')
    assert.equal(r.body.features.length, 1)
    const f = r.body.features[0]
    assert.equal(f.type, 'Feature')
    assert.equal(f.id, a)
    assert.deepEqual(f.geometry, { type: 'Point', coordinates: [13.4, 52.5] })
    assert.deepEqual(Object.keys(f.properties).sort(), ['attributes', 'createdAt', 'publicId', 'typeId', 'updatedAt', 'workflowState'])
    assert.equal(f.properties.typeId, ctx.typeId)
    assert.match(f.properties.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  })

  it('selects fields, nested attribute paths included', async () => {
    const r = await ctx.owner.get('/v1/layers/objects?layer=tall&fields=typeId,attributes.name,attributes.nested.colour')
    assert.equal(r.status, 200, r.text)
    assert.deepEqual(r.body.features[0].properties, { typeId: ctx.typeId, attributes: { name: 'a', nested: { colour: 'red' } } })
    const bad = await ctx.owner.get('/v1/layers/objects?fields=colour')
    assert.equal(bad.status, 400)
    assert.equal(bad.body.error.details.field, 'fields')
  })

  it('filters by typeId and bbox, pages by limit and offset', async () => {
    const all = await ctx.owner.get(`/v1/layers/objects?typeId=${ctx.typeId}&fields=id`)
    assert.deepEqual(all.body.features.map((f: { id: string }) => f.id), [a, b])
    const paris = await ctx.owner.get(`/v1/layers/objects?typeId=${ctx.typeId}&bbox=2,48,3,49&fields=id`)
    assert.deepEqual(paris.body.features.map((f: { id: string }) => f.id), [b])
    const second = await ctx.owner.get(`/v1/layers/objects?typeId=${ctx.typeId}&limit=1&offset=1&fields=id`)
    assert.deepEqual(second.body.features.map((f: { id: string }) => f.id), [b])
    for (const bbox of ['1,2,3', '5,5,4,4', '1,2,3,x', '-200,0,0,0']) {
      const r = await ctx.owner.get(`/v1/layers/objects?bbox=${bbox}`)
      assert.equal(r.status, 400, bbox)
      assert.equal(r.body.error.details.field, 'bbox')
    }
    assert.equal((await ctx.owner.get('/v1/layers/objects?layer=nope')).status, 404)
    assert.equal((await ctx.owner.get('/v1/layers/objects?limit=10001')).status, 400)
  })

  it('reads the layer as of a past time, and is empty before the objects existed', async () => {
    const before = (await ctx.owner.get(`/v1/objects/${a}`)).body
    const patched = await ctx.owner.patch(`/v1/objects/${a}`, { attributes: { height: 1 } }, { 'If-Match': `"${before.version}"` })
    assert.equal(patched.status, 200, patched.text)
    const now = await ctx.owner.get('/v1/layers/objects?layer=tall')
    assert.equal(now.body.features.length, 0)
    const then = await ctx.owner.get(`/v1/layers/objects?layer=tall&asOf=${before.updatedAt}`)
    assert.equal(then.body.features.length, 1)
    assert.equal(then.body.features[0].properties.attributes.height, 9)
    const early = await ctx.owner.get(`/v1/layers/objects?layer=tall&asOf=2000-01-01T00:00:00.000Z`)
    assert.equal(early.status, 200)
    assert.deepEqual(early.body.features, [])
    const restore = await ctx.owner.patch(`/v1/objects/${a}`, { attributes: { height: 9 } }, { 'If-Match': `"${patched.body.version}"` })
    assert.equal(restore.status, 200)
  })
})

describe('vector tiles', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'lyrmvt', type: true })
  let a = ''
  before(async () => {
    a = await place(ctx.owner, ctx.typeId, 13.4, 52.5, { name: 'a', height: 9, tags: ['x', 'y'] })
    await place(ctx.owner, ctx.typeId, -70, -30, { name: 'far' })
    const r = await ctx.owner.post('/v1/layers/definitions', { name: 'Poles', slug: 'poles', definition: { filters: { typeId: ctx.typeId } } })
    assert.equal(r.status, 201, r.text)
  })

  it('renders a tile that a vector-tile parser reads back with the expected features and properties', async () => {
    // z10 tile holding 13.4, 52.5
    const t = await tileOf(ctx.owner, ctx.s.base, '/v1/layers/tiles/poles/10/550/335.mvt')
    assert.equal(t.status, 200)
    assert.equal(t.headers.get('content-type'), 'application/vnd.mapbox-vector-tile')
    const tile = new VectorTile(new Pbf(t.bytes))
    assert.deepEqual(Object.keys(tile.layers), ['poles'])
    const layer = tile.layers.poles
    assert.equal(layer.extent, 4096)
    assert.equal(layer.length, 1)
    const props = layer.feature(0).properties
    assert.equal(props.id, a)
    assert.equal(props.typeId, ctx.typeId)
    assert.equal(props['attributes.name'], 'a')
    assert.equal(props['attributes.height'], 9)
    assert.equal(props['attributes.tags'], '["x", "y"]')
    assert.equal(props.createdAt, undefined)
    const z0 = new VectorTile(new Pbf((await tileOf(ctx.owner, ctx.s.base, '/v1/layers/tiles/poles/0/0/0')).bytes))
    assert.equal(z0.layers.poles.length, 2)
  })

  it('answers an empty tile with 200 and no body, and range faults with 400', async () => {
    const empty = await tileOf(ctx.owner, ctx.s.base, '/v1/layers/tiles/poles/10/0/0.pbf')
    assert.equal(empty.status, 200)
    assert.equal(empty.bytes.length, 0)
    for (const [path, field] of [['19/0/0', 'z'], ['2/4/0', 'x'], ['2/0/4', 'y'], ['1/0/-1', 'y']]) {
      const r = await ctx.owner.get(`/v1/layers/tiles/poles/${path}`)
      assert.equal(r.status, 400, path)
      assert.equal(r.body.error.details.field, field, path)
    }
    assert.equal((await ctx.owner.get('/v1/layers/tiles/nope/0/0/0')).status, 404)
  })

  it('serves a TileJSON 3.0 document', async () => {
    const r = await ctx.owner.get('/v1/layers/tiles/poles.json')
    assert.equal(r.status, 200, r.text)
    assert.equal(r.body.tilejson, '3.0.0')
    assert.deepEqual(r.body.tiles, [`${ctx.s.base}/v1/layers/tiles/poles/{z}/{x}/{y}.mvt`])
    assert.deepEqual(r.body.bounds, [-70, -30, 13.4, 52.5])
    assert.equal(r.body.maxzoom, 18)
    assert.equal(r.body.vector_layers[0].id, 'poles')
    assert.equal(r.body.vector_layers[0].fields['attributes.height'], 'Number')
    assert.equal(r.body.vector_layers[0].fields['attributes.name'], 'String')
  })
})

describe('caching', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'lyrc', type: true })
  let a = ''
  let otherType = ''
  let outsider = ''
  before(async () => {
    otherType = await publishedType(ctx.owner)
    a = await place(ctx.owner, ctx.typeId, 13.4, 52.5, { name: 'a' })
    outsider = await place(ctx.owner, otherType, 13.4, 52.5, { name: 'outside' })
    const r = await ctx.owner.post('/v1/layers/definitions', { name: 'C', slug: 'cached', cacheTtlSeconds: 120, definition: { filters: { typeId: ctx.typeId } } })
    assert.equal(r.status, 201, r.text)
  })

  it('answers 304 to a matching If-None-Match, then 200 with a new ETag after an edit', async () => {
    for (const path of ['/v1/layers/objects?layer=cached', '/v1/layers/tiles/cached/10/550/335', '/v1/layers/objects/stream?layer=cached', '/v1/layers/ogc/collections/cached/items']) {
      const first = await ctx.owner.get(path)
      assert.equal(first.status, 200, path)
      const etag = first.headers.get('etag') ?? ''
      assert.match(etag, /^"[A-Za-z0-9_-]+"$/, path)
      assert.equal(first.headers.get('cache-control'), 'private, max-age=120')
      const again = await ctx.owner.get(path, { 'If-None-Match': etag })
      assert.equal(again.status, 304, path)
      assert.equal(again.text, '')
    }
    const etags = async () => Promise.all(['/v1/layers/objects?layer=cached', '/v1/layers/tiles/cached/10/550/335'].map(async p => (await ctx.owner.get(p)).headers.get('etag')))
    const before = await etags()
    const cur = (await ctx.owner.get(`/v1/objects/${a}`)).body
    assert.equal((await ctx.owner.patch(`/v1/objects/${a}`, { attributes: { name: 'renamed' } }, { 'If-Match': `"${cur.version}"` })).status, 200)
    const after = await etags()
    assert.notEqual(after[0], before[0])
    assert.notEqual(after[1], before[1])
    const r = await ctx.owner.get('/v1/layers/objects?layer=cached', { 'If-None-Match': before[0] ?? '' })
    assert.equal(r.status, 200)
    assert.equal(r.body.features[0].properties.attributes.name, 'renamed')
  })

  it('keeps the ETag when an object outside the layer changes, and changes it when the definition changes', async () => {
    const etag = (await ctx.owner.get('/v1/layers/objects?layer=cached')).headers.get('etag')
    const cur = (await ctx.owner.get(`/v1/objects/${outsider}`)).body
    assert.equal((await ctx.owner.patch(`/v1/objects/${outsider}`, { attributes: { name: 'moved' } }, { 'If-Match': `"${cur.version}"` })).status, 200)
    assert.equal((await ctx.owner.get('/v1/layers/objects?layer=cached')).headers.get('etag'), etag)
    assert.equal((await ctx.owner.patch('/v1/layers/definitions/cached', { description: 'changed' })).status, 200)
    assert.notEqual((await ctx.owner.get('/v1/layers/objects?layer=cached')).headers.get('etag'), etag)
  })

  it('never serves one tenant\'s cached export or ETag to another tenant', async () => {
    const other = ctx.s.as(newTenant('lyrc2'), ['owner'])
    assert.equal((await other.get('/v1/layers/objects?layer=cached')).status, 404)
    assert.equal((await other.get('/v1/layers/tiles/cached/10/550/335')).status, 404)
    assert.equal((await other.post('/v1/layers/definitions', { name: 'C', slug: 'cached' })).status, 201)
    const mine = await ctx.owner.get('/v1/layers/tiles/cached/10/550/335')
    const theirs = await tileOf(other, ctx.s.base, '/v1/layers/tiles/cached/10/550/335')
    assert.equal(theirs.status, 200)
    assert.equal(theirs.bytes.length, 0)
    assert.notEqual(theirs.headers.get('etag'), mine.headers.get('etag'))
    const gj = await other.get('/v1/layers/objects', { 'If-None-Match': (await ctx.owner.get('/v1/layers/objects')).headers.get('etag') ?? '' })
    assert.equal(gj.status, 200)
    assert.deepEqual(gj.body.features, [])
  })
})
