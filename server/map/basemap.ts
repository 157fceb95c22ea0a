import fs from 'node:fs'
import { createRequire } from 'node:module'
import { feature, mesh } from 'topojson-client'
import type { GeometryCollection, Topology } from 'topojson-specification'

// The /map page's basemap: Natural Earth land and country borders at 1:50m, from the TopoJSON the
// npm package world-atlas ships, as ONE GeoJSON FeatureCollection (`kind`: land | border).
// 1:50m rather than 1:110m: the page fits the view to a layer's extent, usually a region or a
// city, where 1:110m's coastline is visibly off and its small islands are missing; what 1:50m costs
// is in docs/performance.md. Borders are the arcs shared by two countries (topojson mesh), so a
// coastline is not drawn twice. Built on first use and kept for the life of the process.

const require = createRequire(import.meta.url)
const SCALE = '50m'

// 3 decimals (about 110 m): finer than the data's own accuracy at 1:50m, and a third fewer bytes.
const PRECISION = 1e3

function readTopology (name: string): Topology {
  return JSON.parse(fs.readFileSync(require.resolve(`world-atlas/${name}-${SCALE}.json`), 'utf8')) as Topology
}

type Coordinates = number | Coordinates[]

function rounded (c: Coordinates): Coordinates {
  return typeof c === 'number' ? Math.round(c * PRECISION) / PRECISION : c.map(rounded)
}

function roundGeometry (g: GeoJSON.Geometry): GeoJSON.Geometry {
  if (g.type === 'GeometryCollection') return { type: g.type, geometries: g.geometries.map(roundGeometry) }
  return { type: g.type, coordinates: rounded(g.coordinates as Coordinates) } as GeoJSON.Geometry
}

/** The basemap document's bytes (UTF-8 JSON). */
export function buildBasemap (): Buffer {
  const land = readTopology('land')
  const countries = readTopology('countries')
  const landCollection = feature(land, land.objects.land as GeometryCollection)
  const borders = mesh(countries, countries.objects.countries as GeometryCollection, (a, b) => a !== b)
  const features = [
    ...landCollection.features.map(f => ({ type: 'Feature', properties: { kind: 'land' }, geometry: roundGeometry(f.geometry) })),
    { type: 'Feature', properties: { kind: 'border' }, geometry: roundGeometry(borders) }
  ]
  return Buffer.from(JSON.stringify({ type: 'FeatureCollection', features }))
}
