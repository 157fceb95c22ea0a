import GeoJSONVT from 'geojson-vt'
import vtpbf from 'vt-pbf'

// Mapbox Vector Tiles encoded in JavaScript, for databases whose PostGIS has no ST_AsMVT
// (embedded PGlite is built without protobuf). The same tile as ST_AsMVTGeom + ST_AsMVT give:
// extent 4096, a 64-pixel buffer, clipped, version 2, one layer named by the layer's slug;
// no simplification (ST_AsMVTGeom only snaps to the tile grid).

const EXTENT = 4096
const BUFFER = 64

/** Encodes the GeoJSON FeatureCollection text of one tile's candidates (export-sql tileFeatures). */
export function encodeTile (featureCollection: string, t: { z: number, x: number, y: number, layerName: string }): Buffer {
  const fc = JSON.parse(featureCollection) as GeoJSON.FeatureCollection
  if (fc.features.length === 0) return Buffer.alloc(0)
  // One index per tile, cut straight down to the requested zoom (no pyramid kept).
  const index = new GeoJSONVT(fc, { maxZoom: t.z, indexMaxZoom: 0, indexMaxPoints: 0, tolerance: 0, extent: EXTENT, buffer: BUFFER })
  const tile = index.getTile(t.z, t.x, t.y)
  if (tile === null || tile.features.length === 0) return Buffer.alloc(0)
  const bytes: Uint8Array = vtpbf.fromGeojsonVt({ [t.layerName]: tile }, { version: 2, extent: EXTENT })
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
