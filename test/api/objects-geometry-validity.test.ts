import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { VectorTile } from '@mapbox/vector-tile'
import { PbfReader as Pbf } from 'pbf'
import { publishedType, useOwnerSession, type Client } from '../support/harness.js'
import { failure, ok } from '../support/graphql.js'
import { createObject, errorOf, square, tenantCounts } from '../fixtures/objects.js'

// docs/behaviour.md "Objects": geometry PostGIS finds invalid is refused (400 with its reason and
// location) or, with the type's geometry.makeValid, repaired and the repair shown in the history;
// shapes PostGIS cannot take on the sphere are refused; the others are stored and queried.

const polygon = (...rings: number[][][]) => ({ type: 'Polygon', coordinates: rings })
const bowtie = polygon([[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]])
const wholeWorld = polygon([[-180, -90], [180, -90], [180, 90], [-180, 90], [-180, -90]])
// The same extent with a position between the poles on each side: no edge joins opposite points.
const worldWithMidpoints = polygon([[-180, -90], [180, -90], [180, 0], [180, 90], [-180, 90], [-180, 0], [-180, -90]])
const polarCap = polygon([[-180, 80], [180, 80], [180, 90], [-180, 90], [-180, 80]])
const splitAtAntimeridian = {
  type: 'MultiPolygon',
  coordinates: [
    [[[170, 10], [180, 10], [180, 20], [170, 20], [170, 10]]],
    [[[-180, 10], [-170, 10], [-170, 20], [-180, 20], [-180, 10]]]
  ]
}
const emptyCollection = { type: 'GeometryCollection', geometries: [] }

async function tileFeatures (c: Client, base: string, path: string): Promise<{ status: number, ids: string[] }> {
  const res = await fetch(base + path, { headers: { Authorization: `Bearer ${c.token}` } })
  if (res.status !== 200) return { status: res.status, ids: [] }
  const layer = new VectorTile(new Pbf(new Uint8Array(await res.arrayBuffer()))).layers.shapes
  return { status: 200, ids: Array.from({ length: layer?.length ?? 0 }, (_, i) => String(layer.feature(i).properties.id)) }
}

describe('object geometry validity', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'geo', type: true })

  /** A refused write: 400 VALIDATION_ERROR and nothing written anywhere in the tenant. */
  async function refused (send: () => Promise<{ status: number, text: string, body: any }>) {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const res = await send()
    assert.equal(res.status, 400, res.text)
    const e = errorOf(res as never)
    assert.equal(e.code, 'VALIDATION_ERROR')
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before, 'a refused write leaves nothing behind')
    return e
  }

  describe('POST, PATCH and batch refuse a geometry PostGIS finds invalid', () => {
    const cases: Array<[string, unknown, string, [number, number]]> = [
      ['a polygon that crosses itself', bowtie, 'Self-intersection', [0.5, 0.5]],
      ['a hole outside its shell', polygon([[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], [[2, 2], [3, 2], [3, 3], [2, 3], [2, 2]]), 'Hole lies outside shell', [2, 2]],
      ['a ring that touches itself', polygon([[0, 0], [2, 0], [1, 1], [2, 2], [0, 2], [1, 1], [0, 0]]), 'Ring Self-intersection', [1, 1]],
      ['nested holes', polygon([[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]], [[1, 1], [9, 1], [9, 9], [1, 9], [1, 1]], [[2, 2], [8, 2], [8, 8], [2, 8], [2, 2]]), 'Holes are nested', [2, 2]],
      ['overlapping polygons of a MultiPolygon', { type: 'MultiPolygon', coordinates: [[[[0, 0], [2, 0], [2, 2], [0, 2], [0, 0]]], [[[1, 1], [3, 1], [3, 3], [1, 3], [1, 1]]]] }, 'Self-intersection', [2, 1]],
      ['a line of one repeated position', { type: 'LineString', coordinates: [[0, 0], [0, 0]] }, 'Too few points in geometry component', [0, 0]]
    ]
    for (const [name, geometry, reason, location] of cases) {
      it(`answers 400 with the reason and location for ${name}`, async () => {
        const e = await refused(() => ctx.owner.post('/v1/objects', { typeId: ctx.typeId, geometry }))
        assert.equal(e.details.field, 'geometry')
        assert.equal(e.details.reason, reason)
        assert.deepEqual(e.details.location, location)
        assert.match(e.message, new RegExp(`${reason} at \\[${location.join(', ')}\\]`))
        assert.match(e.message, /makeValid/)
      })
    }

    it('answers 400 naming the member to a GeometryCollection inside another (PostGIS cannot read it; was a 500)', async () => {
      // Found by test/faults/hostile-input.test.ts (seed 1).
      const nested = { type: 'GeometryCollection', geometries: [{ type: 'GeometryCollection', geometries: [{ type: 'Point', coordinates: [0, 0] }] }] }
      const e = await refused(() => ctx.owner.post('/v1/objects', { typeId: ctx.typeId, geometry: nested }))
      assert.equal(e.details.field, 'geometry.geometries[0]')
      assert.match(e.message, /cannot hold another GeometryCollection/)
    })

    it('answers 400 to a PATCH with an invalid geometry and leaves the object as it was', async () => {
      const o = (await createObject(ctx.owner, { typeId: ctx.typeId, geometry: square() })).body
      const e = await refused(() => ctx.owner.patch(`/v1/objects/${o.id}`, { geometry: bowtie }, { 'If-Match': '1' }))
      assert.deepEqual([e.details.field, e.details.reason, e.details.location], ['geometry', 'Self-intersection', [0.5, 0.5]])
      assert.deepEqual((await ctx.owner.get(`/v1/objects/${o.id}`)).body, o)
    })

    it('refuses a whole batch naming the item whose geometry is invalid', async () => {
      const items = [0, 1, 2].map(i => ({ typeId: ctx.typeId, geometry: i === 2 ? bowtie : square(i) }))
      const e = await refused(() => ctx.owner.post('/v1/objects/batch', { items }))
      assert.equal(e.details.field, 'items[2].geometry')
      assert.equal(e.details.index, 2)
      assert.deepEqual([e.details.reason, e.details.location], ['Self-intersection', [0.5, 0.5]])
    })

    it('reports the same fault in the type\'s dry run, and none where the type repairs', async () => {
      const dry = await ctx.owner.post(`/v1/object-types/${ctx.typeId}/validate`, { geometry: bowtie })
      assert.equal(dry.status, 200, dry.text)
      assert.equal(dry.body.valid, false)
      assert.deepEqual(dry.body.errors, [{ field: 'geometry', reason: 'Self-intersection', location: [0.5, 0.5] }])
      const repairing = await publishedType(ctx.owner, { geometry: { makeValid: true } })
      assert.equal((await ctx.owner.post(`/v1/object-types/${repairing}/validate`, { geometry: bowtie })).body.valid, true)
    })

    it('answers GraphQL createObject and updateObject with the same error', async () => {
      const before = await tenantCounts(ctx.s.db, ctx.tenant)
      const err = await failure(ctx.owner, 'mutation ($input: CreateObjectInput!) { createObject(input: $input) { id } }', { input: { typeId: ctx.typeId, geometry: bowtie } })
      assert.equal(err.extensions.code, 'VALIDATION_ERROR')
      assert.deepEqual([err.extensions.details.field, err.extensions.details.reason, err.extensions.details.location], ['geometry', 'Self-intersection', [0.5, 0.5]])
      const o = (await createObject(ctx.owner, { typeId: ctx.typeId, geometry: square() })).body
      const mid = await tenantCounts(ctx.s.db, ctx.tenant)
      const upd = await failure(ctx.owner, 'mutation ($id: ID!, $input: UpdateObjectInput!) { updateObject(id: $id, version: 1, input: $input) { id } }', { id: o.id, input: { geometry: bowtie } })
      assert.deepEqual([upd.extensions.code, upd.extensions.details.field, upd.extensions.details.reason], ['VALIDATION_ERROR', 'geometry', 'Self-intersection'])
      assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), mid)
      assert.equal(mid.objects, before.objects + 1)
    })
  })

  describe('a type with geometry.makeValid repairs instead', () => {
    let repairing = ''
    let polygonsOnly = ''
    before(async () => {
      repairing = await publishedType(ctx.owner, { geometry: { makeValid: true } })
      polygonsOnly = await publishedType(ctx.owner, { geometry: { types: ['Polygon'], makeValid: true } })
    })

    it('shows makeValid on the type, false unless set', async () => {
      assert.equal((await ctx.owner.get(`/v1/object-types/${ctx.typeId}`)).body.geometry.makeValid, false)
      assert.deepEqual((await ctx.owner.get(`/v1/object-types/${repairing}`)).body.geometry, { required: false, types: [], makeValid: true })
      const data = await ok(ctx.owner, 'query ($id: ID!) { objectType(id: $id) { geometry { makeValid } } }', { id: repairing })
      assert.equal(data.objectType.geometry.makeValid, true)
    })

    it('stores ST_MakeValid\'s result, answers it, and the history says what was repaired', async () => {
      const res = await ctx.owner.post('/v1/objects', { typeId: repairing, geometry: bowtie })
      assert.equal(res.status, 201, res.text)
      assert.equal(res.body.geometry.type, 'MultiPolygon')
      const stored = await ctx.s.db.raw('SELECT ST_IsValid(geom) AS valid, ST_Area(geom) AS area FROM objects WHERE tenant_id = ? AND id = ?', [ctx.tenant, res.body.id])
      assert.deepEqual(stored.rows[0], { valid: true, area: 0.5 })
      assert.deepEqual((await ctx.owner.get(`/v1/objects/${res.body.id}`)).body, res.body)

      const p = await ctx.owner.patch(`/v1/objects/${res.body.id}`, { geometry: square(0, 0, 1) }, { 'If-Match': '1' })
      assert.equal(p.status, 200, p.text)
      const q = await ctx.owner.patch(`/v1/objects/${res.body.id}`, { geometry: polygon([[0, 0], [2, 0], [1, 1], [2, 2], [0, 2], [1, 1], [0, 0]]) }, { 'If-Match': '2' })
      assert.equal(q.status, 200, q.text)
      assert.equal(q.body.geometry.type, 'MultiPolygon')
      const history = (await ctx.owner.get(`/v1/objects/${res.body.id}/history`)).body.items
      assert.deepEqual(history.map((h: { geometryRepair: unknown }) => h.geometryRepair), [
        { reason: 'Self-intersection', location: [0.5, 0.5] },
        null,
        { reason: 'Ring Self-intersection', location: [1, 1] }
      ])
      assert.deepEqual(history[0].object.geometry, res.body.geometry)
      const data = await ok(ctx.owner, 'query ($id: ID!) { objectHistory(id: $id) { items { version geometryRepair } } }', { id: res.body.id })
      assert.deepEqual(data.objectHistory.items[0], { version: 1, geometryRepair: { reason: 'Self-intersection', location: [0.5, 0.5] } })
    })

    it('repairs batch items one by one', async () => {
      const res = await ctx.owner.post('/v1/objects/batch', { items: [{ typeId: repairing, geometry: square() }, { typeId: repairing, geometry: bowtie }] })
      assert.equal(res.status, 201, res.text)
      assert.deepEqual(res.body.items.map((o: { geometry: { type: string } }) => o.geometry.type), ['Polygon', 'MultiPolygon'])
      const history = (await ctx.owner.get(`/v1/objects/${res.body.items[0].id}/history`)).body.items
      assert.equal(history[0].geometryRepair, null)
    })

    it('refuses a repair whose result the type does not allow, or that leaves nothing', async () => {
      const e = await refused(() => ctx.owner.post('/v1/objects', { typeId: polygonsOnly, geometry: bowtie }))
      assert.deepEqual([e.details.field, e.details.reason], ['geometry', 'Self-intersection'])
      assert.match(e.details.repair, /MultiPolygon/)
      const spike = await refused(() => ctx.owner.post('/v1/objects', { typeId: repairing, geometry: polygon([[0, 0], [1, 0], [2, 0], [0, 0]]) }))
      assert.match(spike.details.repair, /nothing is left/)
    })
  })

  describe('shapes at the edges of the globe', () => {
    it('refuses an edge between opposite points of the globe (the whole world as four corners) with 400, never 500', async () => {
      const cases: Array<[unknown, string]> = [
        [wholeWorld, 'geometry.coordinates[0][2]'],
        [{ type: 'LineString', coordinates: [[0, -90], [10, 90]] }, 'geometry.coordinates[1]'],
        [{ type: 'LineString', coordinates: [[0, 0], [180, 0]] }, 'geometry.coordinates[1]'],
        [{ type: 'GeometryCollection', geometries: [{ type: 'Point', coordinates: [0, 0] }, wholeWorld] }, 'geometry.geometries[1].coordinates[0][2]']
      ]
      for (const [geometry, field] of cases) {
        const e = await refused(() => ctx.owner.post('/v1/objects', { typeId: ctx.typeId, geometry }))
        assert.equal(e.details.field, field)
        assert.match(e.details.reason, /opposite points of the globe/)
      }
      const o = (await createObject(ctx.owner, { typeId: ctx.typeId, geometry: square() })).body
      const e = await refused(() => ctx.owner.patch(`/v1/objects/${o.id}`, { geometry: wholeWorld }, { 'If-Match': '1' }))
      assert.equal(e.details.field, 'geometry.coordinates[0][2]')
      const b = await refused(() => ctx.owner.post('/v1/objects/batch', { items: [{ typeId: ctx.typeId, geometry: wholeWorld }] }))
      assert.equal(b.details.field, 'items[0].geometry.coordinates[0][2]')
    })

    it('refuses empty geometries other than an empty GeometryCollection, and elevations', async () => {
      const cases: Array<[unknown, string]> = [
        [{ type: 'Polygon', coordinates: [] }, 'geometry.coordinates'],
        [{ type: 'MultiPolygon', coordinates: [] }, 'geometry.coordinates'],
        [{ type: 'LineString', coordinates: [] }, 'geometry.coordinates'],
        [{ type: 'MultiPoint', coordinates: [] }, 'geometry.coordinates'],
        [{ type: 'Point', coordinates: [] }, 'geometry.coordinates'],
        [{ type: 'Point', coordinates: [13, 52, 40] }, 'geometry.coordinates'],
        [polygon([[0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 0, 1]]), 'geometry.coordinates[0][0]']
      ]
      for (const [geometry, field] of cases) {
        const e = await refused(() => ctx.owner.post('/v1/objects', { typeId: ctx.typeId, geometry }))
        assert.equal(e.details.field, field, JSON.stringify(geometry))
      }
    })

    describe('stored shapes are read, filtered and tiled', () => {
      const ids: Record<string, string> = {}
      const run = (filters: unknown[]) => ctx.owner.post('/v1/queries/objects/run', { filters: [{ field: 'typeId', operator: 'eq', value: shapesType }, ...filters] })
      let shapesType = ''
      const found = async (filters: unknown[]): Promise<string[]> => {
        const r = await run(filters)
        assert.equal(r.status, 200, r.text)
        return r.body.items.map((o: { id: string }) => Object.entries(ids).find(([, id]) => id === o.id)?.[0]).sort()
      }
      before(async () => {
        shapesType = await publishedType(ctx.owner)
        const shapes = { world: worldWithMidpoints, cap: polarCap, split: splitAtAntimeridian, empty: emptyCollection }
        for (const [name, geometry] of Object.entries(shapes)) {
          const res = await createObject(ctx.owner, { typeId: shapesType, attributes: { name }, geometry })
          assert.deepEqual(res.body.geometry, geometry, `${name} comes back as sent`)
          ids[name] = res.body.id
        }
        const layer = await ctx.owner.post('/v1/layers/definitions', { name: 'Shapes', slug: 'shapes', definition: { filters: { typeId: shapesType } } })
        assert.equal(layer.status, 201, layer.text)
      })

      it('answers bbox filters on both sides of the antimeridian and at the pole', async () => {
        const bbox = (bounds: number[]) => [{ field: 'geometry', operator: 'bbox', value: bounds }]
        assert.deepEqual(await found(bbox([175, 12, 179, 18])), ['split', 'world'])
        assert.deepEqual(await found(bbox([-179, 12, -175, 18])), ['split', 'world'])
        assert.deepEqual(await found(bbox([0, 85, 10, 89])), ['cap', 'world'])
        assert.deepEqual(await found(bbox([0, -1, 1, 1])), ['world'])
      })

      it('answers the layer export\'s bbox the same way', async () => {
        const r = await ctx.owner.get('/v1/layers/objects?layer=shapes&bbox=-179,12,-175,18')
        assert.equal(r.status, 200, r.text)
        assert.deepEqual(r.body.features.map((f: { id: string }) => f.id).sort(), [ids.split, ids.world].sort())
      })

      it('answers within, intersects and dwithin with such shapes as filters (400 only for an edge dwithin cannot take)', async () => {
        assert.deepEqual(await found([{ field: 'geometry', operator: 'within', value: worldWithMidpoints }]), ['cap', 'split', 'world'])
        assert.deepEqual(await found([{ field: 'geometry', operator: 'within', value: wholeWorld }]), ['cap', 'split', 'world'])
        assert.deepEqual(await found([{ field: 'geometry', operator: 'intersects', value: { type: 'Point', coordinates: [-175, 15] } }]), ['split', 'world'])
        assert.deepEqual(await found([{ field: 'geometry', operator: 'intersects', value: { type: 'Point', coordinates: [179.5, 15, 100] } }]), ['split', 'world'])
        // dwithin follows great circles (docs/behaviour.md "Query service"): the split shape is 1 km away across the antimeridian.
        assert.ok((await found([{ field: 'geometry', operator: 'dwithin', value: { type: 'Point', coordinates: [-179.99, 15] }, distanceMeters: 5000 }])).includes('split'))
        assert.ok((await found([{ field: 'geometry', operator: 'dwithin', value: { type: 'Point', coordinates: [45, 90] }, distanceMeters: 1000 }])).includes('cap'))
        assert.deepEqual(await found([{ field: 'geometry', operator: 'intersects', value: emptyCollection }]), [])
        assert.deepEqual(await found([{ field: 'geometry', operator: 'dwithin', value: emptyCollection, distanceMeters: 10 }]), [])
        assert.deepEqual(await found([{ field: 'geometry', operator: 'within', value: bowtie }]), [])
        const r = await run([{ field: 'geometry', operator: 'dwithin', value: wholeWorld, distanceMeters: 10 }])
        assert.equal(r.status, 400, r.text)
        assert.equal(errorOf(r).details.field, 'filters[1].value.coordinates[0][2]')
        for (const op of ['within', 'contains', 'intersects']) {
          for (const value of [wholeWorld, { type: 'Polygon', coordinates: [] }, polygon([[0, 0, 5], [1, 0, 5], [1, 1, 5], [0, 0, 5]])]) {
            const res = await run([{ field: 'geometry', operator: op, value }])
            assert.ok(res.status === 200 || res.status === 400, `${op} ${JSON.stringify(value)}: ${res.status} ${res.text}`)
          }
        }
      })

      it('reads the empty collection back and leaves it out of tiles, which render the others', async () => {
        assert.deepEqual((await ctx.owner.get(`/v1/objects/${ids.empty}`)).body.geometry, emptyCollection)
        const z0 = await tileFeatures(ctx.owner, ctx.s.base, '/v1/layers/tiles/shapes/0/0/0.mvt')
        assert.equal(z0.status, 200)
        assert.deepEqual(z0.ids.sort(), [ids.cap, ids.split, ids.world].sort())
        // z2: the tiles at the antimeridian's two sides hold both halves of the split shape.
        for (const x of [0, 3]) {
          const t = await tileFeatures(ctx.owner, ctx.s.base, `/v1/layers/tiles/shapes/2/${x}/1.mvt`)
          assert.equal(t.status, 200)
          assert.ok(t.ids.includes(ids.split), `tile 2/${x}/1`)
        }
      })
    })
  })
})
