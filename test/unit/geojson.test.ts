import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { validateGeometry, findElevation, findAntipodalEdge } from '../../lib/geo/index.js'

// One fixture per edge case (RFC 7946 section 3.1; WGS84 ranges). Each invalid fixture names the
// path the fault must point at, so a message can tell the client what to fix.
const ring = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]

const valid: Array<[string, unknown]> = [
  ['a Point', { type: 'Point', coordinates: [13.4, 52.5] }],
  ['a Point on the antimeridian at +180', { type: 'Point', coordinates: [180, 0] }],
  ['a Point on the antimeridian at -180', { type: 'Point', coordinates: [-180, 0] }],
  ['the poles', { type: 'MultiPoint', coordinates: [[0, 90], [0, -90]] }],
  ['a LineString crossing the antimeridian by its coordinates', { type: 'LineString', coordinates: [[179.5, 10], [-179.5, 10]] }],
  ['a position with elevation (structurally valid GeoJSON)', { type: 'Point', coordinates: [1, 2, 3] }],
  ['a Polygon with a hole', { type: 'Polygon', coordinates: [ring, [[0.2, 0.2], [0.4, 0.2], [0.4, 0.4], [0.2, 0.2]]] }],
  ['a MultiPolygon', { type: 'MultiPolygon', coordinates: [[ring], [[[5, 5], [6, 5], [6, 6], [5, 5]]]] }],
  ['a MultiLineString', { type: 'MultiLineString', coordinates: [[[0, 0], [1, 1]], [[2, 2], [3, 3]]] }],
  ['a bbox member', { type: 'Point', coordinates: [1, 1], bbox: [1, 1, 1, 1] }],
  ['an empty GeometryCollection', { type: 'GeometryCollection', geometries: [] }],
  ['a GeometryCollection of a Point', nest(1)]
]

const invalid: Array<[string, unknown, string, RegExp]> = [
  ['null', null, '', /GeoJSON geometry object/],
  ['an array', [1, 2], '', /GeoJSON geometry object/],
  ['an unknown type', { type: 'Circle', coordinates: [0, 0] }, '.type', /must be one of/],
  ['a lower-case type', { type: 'point', coordinates: [0, 0] }, '.type', /must be one of/],
  ['a Feature instead of a geometry', { type: 'Feature', geometry: null, properties: {} }, '.type', /must be one of/],
  ['longitude 181', { type: 'Point', coordinates: [181, 0] }, '.coordinates[0]', /longitude/],
  ['longitude -180.0001', { type: 'Point', coordinates: [-180.0001, 0] }, '.coordinates[0]', /longitude/],
  ['latitude 90.5', { type: 'Point', coordinates: [0, 90.5] }, '.coordinates[1]', /latitude/],
  ['swapped lat/lon out of range', { type: 'Point', coordinates: [52.5, 113.4] }, '.coordinates[1]', /latitude/],
  ['a coordinate given as a string', { type: 'Point', coordinates: ['13.4', 52.5] }, '.coordinates[0]', /finite number/],
  ['a non-finite coordinate (1e400 parses as Infinity)', JSON.parse('{"type":"Point","coordinates":[1e400,0]}'), '.coordinates[0]', /finite number/],
  ['a position with one number', { type: 'Point', coordinates: [1] }, '.coordinates', /position/],
  ['a position with four numbers', { type: 'Point', coordinates: [1, 2, 3, 4] }, '.coordinates', /position/],
  ['a Point without coordinates', { type: 'Point' }, '.coordinates', /position/],
  ['an open ring', { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] }, '.coordinates[0]', /closed/],
  ['a ring of 3 positions', { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [0, 0]]] }, '.coordinates[0]', /at least 4/],
  ['a Polygon without rings', { type: 'Polygon', coordinates: [] }, '.coordinates', /at least 1/],
  ['a Polygon nested one level too shallow', { type: 'Polygon', coordinates: ring }, '.coordinates[0][0]', /position/],
  ['a Point nested too deep', { type: 'Point', coordinates: [[1, 2]] }, '.coordinates', /position/],
  ['a MultiPoint nested one level too shallow', { type: 'MultiPoint', coordinates: [1, 2] }, '.coordinates[0]', /position/],
  ['an empty MultiPoint', { type: 'MultiPoint', coordinates: [] }, '.coordinates', /at least 1/],
  ['a LineString of one position', { type: 'LineString', coordinates: [[0, 0]] }, '.coordinates', /at least 2/],
  ['an open ring in the second polygon of a MultiPolygon', { type: 'MultiPolygon', coordinates: [[ring], [[[5, 5], [6, 5], [6, 6], [5, 6]]]] }, '.coordinates[1][0]', /closed/],
  ['a GeometryCollection in a GeometryCollection', nest(2), '.geometries[0]', /cannot hold another GeometryCollection/],
  ['a GeometryCollection without geometries', { type: 'GeometryCollection' }, '.geometries', /array/],
  ['an invalid member of a GeometryCollection', { type: 'GeometryCollection', geometries: [{ type: 'Point', coordinates: [0, 0] }, { type: 'Point', coordinates: [200, 0] }] }, '.geometries[1].coordinates[0]', /longitude/],
  ['an extra member', { type: 'Point', coordinates: [0, 0], properties: {} }, '.properties', /not a member/],
  ['coordinates on a GeometryCollection', { type: 'GeometryCollection', geometries: [], coordinates: [0, 0] }, '.coordinates', /not a member/],
  ['a bbox that is not an array', { type: 'Point', coordinates: [0, 0], bbox: 'x' }, '.bbox', /bbox/],
  ['a bbox with 3 numbers', { type: 'Point', coordinates: [0, 0], bbox: [0, 0, 1] }, '.bbox', /bbox/],
  ['a bbox holding a string', { type: 'Point', coordinates: [0, 0], bbox: [0, 0, '1', 1] }, '.bbox', /bbox/]
]

function nest (depth: number): unknown {
  let g: unknown = { type: 'Point', coordinates: [0, 0] }
  for (let i = 0; i < depth; i++) g = { type: 'GeometryCollection', geometries: [g] }
  return g
}

describe('validateGeometry', () => {
  for (const [name, g] of valid) {
    it(`accepts ${name}`, () => {
      assert.equal(validateGeometry(g, 'geometry'), null)
    })
  }
  for (const [name, g, path, reason] of invalid) {
    it(`rejects ${name} at geometry${path}`, () => {
      const fault = validateGeometry(g, 'geometry')
      assert.ok(fault, 'expected a fault')
      assert.equal(fault.path, `geometry${path}`)
      assert.match(fault.reason, reason)
    })
  }
})

describe('position messages', () => {
  it('name the 2D form [longitude, latitude] only, as findElevation asks for it', () => {
    for (const c of [[], [1], [1, 2, 3, 4], 'x', [[1, 2]]]) {
      const fault = validateGeometry({ type: 'Point', coordinates: c }, 'geometry')
      assert.match(fault?.reason ?? '', /\[longitude, latitude\]/, JSON.stringify(c))
      assert.doesNotMatch(fault?.reason ?? '', /elevation/, JSON.stringify(c))
    }
    const elevation = findElevation({ type: 'Point', coordinates: [1, 2, 3] }, 'geometry')
    assert.match(elevation?.reason ?? '', /send \[longitude, latitude\]/)
  })
})

describe('findElevation', () => {
  it('finds nothing in 2D geometries', () => {
    for (const [, g] of valid.filter(([n]) => !n.includes('elevation'))) assert.equal(findElevation(g as never, 'geometry'), null)
  })
  it('names the first position that carries an elevation', () => {
    const f = findElevation({ type: 'GeometryCollection', geometries: [{ type: 'LineString', coordinates: [[0, 0], [1, 1, 30]] }] }, 'geometry')
    assert.equal(f?.path, 'geometry.geometries[0].coordinates[1]')
    assert.match(f?.reason ?? '', /elevation/)
  })
})

describe('findAntipodalEdge', () => {
  const ring = (...ps: number[][]) => ({ type: 'Polygon' as const, coordinates: [ps] })
  it('finds the edge PostGIS refuses on the sphere: pole to pole, or 180 degrees apart on the equator', () => {
    const world = ring([-180, -90], [180, -90], [180, 90], [-180, 90], [-180, -90])
    assert.equal(findAntipodalEdge(world, 'geometry')?.path, 'geometry.coordinates[0][2]')
    assert.match(findAntipodalEdge(world, 'geometry')?.reason ?? '', /opposite points of the globe.*add a position between them/)
    assert.equal(findAntipodalEdge({ type: 'LineString', coordinates: [[0, 0], [180, 0]] }, 'g')?.path, 'g.coordinates[1]')
    assert.equal(findAntipodalEdge({ type: 'LineString', coordinates: [[10, 20], [-170, -20]] }, 'g')?.path, 'g.coordinates[1]')
    assert.equal(findAntipodalEdge({ type: 'GeometryCollection', geometries: [{ type: 'MultiLineString', coordinates: [[[0, 1], [1, 1]], [[5, 90], [0, -90]]] }] }, 'g')?.path, 'g.geometries[0].coordinates[1][1]')
  })
  it('lets nearly opposite points, one point named twice (both -180 and 180 at a pole) and points alone through', () => {
    assert.equal(findAntipodalEdge({ type: 'LineString', coordinates: [[10, 20], [-170.000001, -20]] }, 'g'), null)
    assert.equal(findAntipodalEdge(ring([-180, 80], [180, 80], [180, 90], [-180, 90], [-180, 80]), 'g'), null)
    assert.equal(findAntipodalEdge({ type: 'MultiPoint', coordinates: [[0, 90], [0, -90]] }, 'g'), null)
    for (const [, g] of valid) assert.equal(findAntipodalEdge(g as never, 'geometry'), null)
  })
})
