import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, type Db } from '../../lib/db.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { box, fixture, point, type Fixture } from './query-fixtures.js'

// Each spatial operator against geometries whose answer is known by construction.
describe('query service: spatial operators', () => {
  let db: Db
  let f: Fixture

  async function keys (filter: unknown): Promise<string[]> {
    const r = await f.run({ filters: [filter], limit: 1000 })
    return r.items.map((o: { attributes: { key: string } }) => o.attributes.key).sort()
  }

  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 5 })
    f = await fixture(db, 'qgeo')
    await f.object({ key: 'p' }, point(-1, -1))
    await f.object({ key: 'q' }, point(5, 5))
    await f.object({ key: 'none' })
    await f.object({ key: 'square' }, box(0, 0, 2, 2))
    await f.object({ key: 'diag' }, { type: 'LineString', coordinates: [[10, 10], [11, 11]] })
    await f.object({ key: 'east' }, point(179.9995, 0))
    // A great-circle arc from (-60, 60) to (60, 60) bulges to about 73.9 N at longitude 0,
    // far outside its planar bounding box (latitude 60 only).
    await f.object({ key: 'arc' }, { type: 'LineString', coordinates: [[-60, 60], [60, 60]] })
  })
  after(() => db.destroy())

  it('within: objects inside the geometry', async () => {
    assert.deepEqual(await keys({ field: 'geometry', operator: 'within', value: box(-2, -2, 3, 3) }), ['p', 'square'])
  })

  it('contains: objects containing the geometry', async () => {
    assert.deepEqual(await keys({ field: 'geometry', operator: 'contains', value: point(1, 1) }), ['square'])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'contains', value: box(0.5, 0.5, 1.5, 1.5) }), ['square'])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'contains', value: box(0.5, 0.5, 2.5, 1.5) }), [])
  })

  it('intersects: objects sharing any point with the geometry', async () => {
    assert.deepEqual(await keys({ field: 'geometry', operator: 'intersects', value: box(4, 4, 10.5, 10.5) }), ['diag', 'q'])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'intersects', value: { type: 'LineString', coordinates: [[2, -1], [2, 3]] } }), ['square'])
  })

  it('dwithin measures meters on the sphere (0.001 degree of latitude is 111.19 m)', async () => {
    assert.deepEqual(await keys({ field: 'geometry', operator: 'dwithin', value: point(-1, -0.999), distanceMeters: 111.5 }), ['p'])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'dwithin', value: point(-1, -0.999), distanceMeters: 110.9 }), [])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'dwithin', value: point(2.001, 1), distanceMeters: 112 }), ['square'])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'dwithin', value: point(1, 1), distanceMeters: 0 }), ['square'])
  })

  it('dwithin crosses the antimeridian and follows great-circle edges', async () => {
    assert.deepEqual(await keys({ field: 'geometry', operator: 'dwithin', value: point(-179.9995, 0), distanceMeters: 120 }), ['east'])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'dwithin', value: point(0, 73.9), distanceMeters: 2000 }), ['arc'])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'dwithin', value: point(0, 60), distanceMeters: 100_000 }), [])
  })

  it('bbox: objects whose geometry meets [minX, minY, maxX, maxY] (exact, not just their box)', async () => {
    assert.deepEqual(await keys({ field: 'geometry', operator: 'bbox', value: [-2, -2, 3, 3] }), ['p', 'square'])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'bbox', value: [1.5, 1.5, 6, 6] }), ['q', 'square'])
    // The line's own box overlaps these bounds, the line does not.
    assert.deepEqual(await keys({ field: 'geometry', operator: 'bbox', value: [10.6, 10, 11, 10.4] }), [])
  })

  it('geometry presence and negated spatial filters (objects without geometry satisfy not)', async () => {
    assert.deepEqual(await keys({ field: 'geometry', operator: 'isNull' }), ['none'])
    assert.deepEqual(await keys({ operator: 'not', filters: [{ field: 'geometry', operator: 'bbox', value: [-180, -90, 0, 90] }] }), ['diag', 'east', 'none', 'q'])
  })

  it('answers for self-intersecting, 3D and collection filter geometries without a 500', async () => {
    const bowtie = { type: 'Polygon', coordinates: [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]] }
    for (const op of ['within', 'contains', 'intersects']) {
      const r = await f.run({ filters: [{ field: 'geometry', operator: op, value: bowtie }] })
      assert.ok(Array.isArray(r.items), op)
    }
    assert.deepEqual(await keys({ field: 'geometry', operator: 'intersects', value: { type: 'Point', coordinates: [1, 1, 100] } }), ['square'])
    const gc = { type: 'GeometryCollection', geometries: [point(5, 5), box(-2, -2, -0.5, -0.5)] }
    assert.deepEqual(await keys({ field: 'geometry', operator: 'within', value: gc }), ['p', 'q'])
  })
})
