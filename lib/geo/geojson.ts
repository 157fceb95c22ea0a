// Structural GeoJSON geometry validation (RFC 7946 section 3.1), in WGS84.
// Returns the first fault as {path, reason} with a path relative to the geometry.

export const GEOMETRY_TYPES = ['Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon', 'GeometryCollection'] as const
export type GeometryType = typeof GEOMETRY_TYPES[number]

export interface Geometry { type: GeometryType, coordinates?: unknown, geometries?: Geometry[] }
export interface GeoFault { path: string, reason: string }

// PostGIS's GeoJSON reader (ST_GeomFromGeoJSON) refuses a GeometryCollection inside another one
// ("geometry not supported", a 500 before this bound), and RFC 7946 3.1.8 asks to avoid them: one level.
const MAX_COLLECTION_DEPTH = 1

// Positions are 2D: every message asks for [longitude, latitude]. A third number passes this
// structural check (RFC 7946 allows it), but a stored geometry refuses it (findElevation), and
// the geometries only compared with stored ones (guards, rules, query filters) are compared in
// 2D; so no message offers an elevation.
function position (p: unknown, path: string): GeoFault | null {
  if (!Array.isArray(p) || p.length < 2 || p.length > 3) return { path, reason: 'must be a position [longitude, latitude]' }
  for (const [i, v] of p.entries()) {
    if (typeof v !== 'number' || !Number.isFinite(v)) return { path: `${path}[${i}]`, reason: 'must be a finite number' }
  }
  if (p[0] < -180 || p[0] > 180) return { path: `${path}[0]`, reason: 'longitude must be between -180 and 180' }
  if (p[1] < -90 || p[1] > 90) return { path: `${path}[1]`, reason: 'latitude must be between -90 and 90' }
  return null
}

// Nesting is checked before length, so a geometry nested one level wrong is reported as such
// rather than as "too few positions".
function positions (ps: unknown, path: string, min: number, what: string): GeoFault | null {
  if (!Array.isArray(ps)) return { path, reason: `must be an array of positions (${what})` }
  for (const [i, p] of ps.entries()) {
    const f = position(p, `${path}[${i}]`)
    if (f) return f
  }
  if (ps.length < min) return { path, reason: `${what} needs at least ${min} positions` }
  return null
}

function ring (r: unknown, path: string): GeoFault | null {
  const f = positions(r, path, 4, 'a linear ring')
  if (f) return f
  const ps = r as number[][]
  const a = ps[0]
  const b = ps[ps.length - 1]
  if (a.length !== b.length || a.some((v, i) => v !== b[i])) return { path, reason: 'linear ring must be closed (first and last positions equal)' }
  return null
}

function each (xs: unknown, path: string, what: string, check: (x: unknown, p: string) => GeoFault | null, min = 1): GeoFault | null {
  if (!Array.isArray(xs)) return { path, reason: `must be an array of ${what}` }
  if (xs.length < min) return { path, reason: `needs at least ${min} ${what}` }
  for (const [i, x] of xs.entries()) {
    const f = check(x, `${path}[${i}]`)
    if (f) return f
  }
  return null
}

function isBbox (b: unknown): boolean {
  return Array.isArray(b) && (b.length === 4 || b.length === 6) && b.every(v => typeof v === 'number' && Number.isFinite(v))
}

export function validateGeometry (g: unknown, path = '', depth = 0): GeoFault | null {
  if (g === null || typeof g !== 'object' || Array.isArray(g)) return { path, reason: 'must be a GeoJSON geometry object' }
  const o = g as Record<string, unknown>
  const type = o.type
  if (typeof type !== 'string' || !(GEOMETRY_TYPES as readonly string[]).includes(type)) {
    return { path: `${path}.type`, reason: `must be one of ${GEOMETRY_TYPES.join(', ')}` }
  }
  const allowed = type === 'GeometryCollection' ? ['type', 'geometries', 'bbox'] : ['type', 'coordinates', 'bbox']
  // Foreign members would be dropped silently by PostGIS, so they are refused instead.
  const extra = Object.keys(o).find(k => !allowed.includes(k))
  if (extra !== undefined) return { path: `${path}.${extra}`, reason: `is not a member of a ${type}` }
  if (o.bbox !== undefined && !isBbox(o.bbox)) return { path: `${path}.bbox`, reason: 'a bbox must be an array of 4 (or 6) finite numbers' }
  const c = o.coordinates
  const cp = `${path}.coordinates`
  switch (type) {
    case 'Point': return position(c, cp)
    case 'MultiPoint': return positions(c, cp, 1, 'a MultiPoint')
    case 'LineString': return positions(c, cp, 2, 'a LineString')
    case 'MultiLineString': return each(c, cp, 'LineStrings', (l, p) => positions(l, p, 2, 'a LineString'))
    case 'Polygon': return each(c, cp, 'linear rings', ring)
    case 'MultiPolygon': return each(c, cp, 'Polygons', (poly, p) => each(poly, p, 'linear rings', ring))
    default: {
      if (depth >= MAX_COLLECTION_DEPTH) return { path, reason: 'a GeometryCollection cannot hold another GeometryCollection (RFC 7946 3.1.8): list its members instead' }
      return each(o.geometries, `${path}.geometries`, 'geometries', (x, p) => validateGeometry(x, p, depth + 1), 0)
    }
  }
}

/**
 * The first position carrying an elevation, in a geometry validateGeometry accepted. Objects
 * store 2D geometries (column geometry(Geometry, 4326)), and PostGIS refuses a Z geometry there,
 * so callers that store refuse elevations with this fault instead of failing in the database.
 */
export function findElevation (g: Geometry, path = ''): GeoFault | null {
  return inCoordinates(g, path, x => elevationIn(x.coordinates, `${x.path}.coordinates`))
}

/** The first fault `check` finds in `g`, or in a member of it when it is a GeometryCollection. */
function inCoordinates (g: Geometry, path: string, check: (x: { type: GeometryType, coordinates: unknown, path: string }) => GeoFault | null): GeoFault | null {
  if (g.type !== 'GeometryCollection') return check({ type: g.type, coordinates: g.coordinates, path })
  for (const [i, x] of (g.geometries ?? []).entries()) {
    const f = inCoordinates(x, `${path}.geometries[${i}]`, check)
    if (f) return f
  }
  return null
}

function elevationIn (c: unknown, path: string): GeoFault | null {
  if (!Array.isArray(c)) return null
  if (c.length > 0 && typeof c[0] === 'number') {
    return c.length > 2 ? { path, reason: 'elevation (a third coordinate) is not stored; send [longitude, latitude]' } : null
  }
  for (const [i, x] of c.entries()) {
    const f = elevationIn(x, `${path}[${i}]`)
    if (f) return f
  }
  return null
}

/**
 * The first edge whose ends are opposite points of the globe (pole to pole, or 180 degrees apart
 * on the equator), in a geometry validateGeometry accepted. Such an edge has no single great
 * circle, so PostGIS refuses it as a geography ("Antipodal edge"), which the objects' sphere index
 * (geom::geography) and dwithin need; the test is PostGIS's own (lwgeodetic edge_calculate_gbox).
 * The whole world as one ring of four corners has two: its sides along the antimeridian.
 */
export function findAntipodalEdge (g: Geometry, path = ''): GeoFault | null {
  // The positions of a MultiPoint are not joined by edges.
  return inCoordinates(g, path, x => x.type === 'Point' || x.type === 'MultiPoint' ? null : antipodalIn(x.coordinates, `${x.path}.coordinates`))
}

function antipodalIn (c: unknown, path: string): GeoFault | null {
  if (!Array.isArray(c) || c.length === 0) return null
  if (Array.isArray(c[0]) && typeof c[0][0] === 'number') {
    const ps = c as number[][]
    for (let i = 1; i < ps.length; i++) {
      if (antipodal(ps[i - 1], ps[i])) {
        return { path: `${path}[${i}]`, reason: `the edge from [${ps[i - 1].join(', ')}] to [${ps[i].join(', ')}] joins opposite points of the globe, which no single edge can; add a position between them` }
      }
    }
    return null
  }
  for (const [i, x] of c.entries()) {
    const f = antipodalIn(x, `${path}[${i}]`)
    if (f) return f
  }
  return null
}

// PostGIS's tolerance for points on the unit sphere (liblwgeom FP_TOLERANCE).
const SPHERE_TOLERANCE = 1e-12

function antipodal (a: number[], b: number[]): boolean {
  const p = unitVector(a)
  const q = unitVector(b)
  return p.every((v, i) => Math.abs(v + q[i]) <= SPHERE_TOLERANCE)
}

function unitVector ([lon, lat]: number[]): [number, number, number] {
  const λ = lon * Math.PI / 180
  const φ = lat * Math.PI / 180
  return [Math.cos(φ) * Math.cos(λ), Math.cos(φ) * Math.sin(λ), Math.sin(φ)]
}

function countPositions (v: unknown): number {
  if (!Array.isArray(v)) return 0
  if (typeof v[0] === 'number') return 1
  let n = 0
  for (const x of v) n += countPositions(x)
  return n
}

/** The positions a geometry holds (what the work of a spatial operation grows with). */
export function geometryPositions (g: Geometry): number {
  if (g.type !== 'GeometryCollection') return countPositions(g.coordinates)
  return (Array.isArray(g.geometries) ? g.geometries : []).reduce((n, x) => n + geometryPositions(x), 0)
}
