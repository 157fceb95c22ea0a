import jsonLogic from 'json-logic-js'
import * as turf from '@turf/turf'
import type { Feature, Geometry, MultiPolygon, Polygon } from 'geojson'
import { geometryPositions, type Geometry as GeoJson } from './geo/index.js'

// `method` (in some json-logic-js versions) calls arbitrary methods on values: never allowed.
try { jsonLogic.rm_operation('method') } catch { /* absent in this version */ }

const OPERATORS = new Set([
  '==', '===', '!=', '!==', '>', '>=', '<', '<=', '!!', '!', '%', 'in', 'cat', 'substr', '+', '*', '-', '/',
  'min', 'max', 'merge', 'var', 'missing', 'missing_some', 'if', '?:', 'and', 'or', 'filter', 'map', 'reduce',
  'all', 'none', 'some', 'geoWithin', 'geoDistanceWithin', 'geoIntersects'
])
const MAX_DEPTH = 32
/** Operations in one rule. */
const MAX_NODES = 2000
/** Steps of one evaluation: map/filter/reduce over large data nested in each other stop here. */
const MAX_STEPS = 100_000
/**
 * Positions the geofencing operations of one evaluation may read, all operations together; a
 * geoWithin whose first operand is not a Point reads positions x positions (turf's booleanWithin
 * is quadratic: two polygons of 1,000 positions took 1.7 s, of 5,000, 35 s, on the main thread).
 */
export const MAX_GEO_POSITIONS = 10_000
/** Path segments that would walk out of the data into JavaScript's object machinery. */
const UNSAFE_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype'])

// Geofencing on GeoJSON values that live in no table (a vehicle reporting its position in a
// webhook payload), evaluated in process with turf (lib/automation/README.md lists them):
//   {"geoWithin": [a, b]}                 a lies inside b (a point inside a polygon)
//   {"geoDistanceWithin": [a, b, meters]} a point a is within `meters` of geometry b, on the sphere
//   {"geoIntersects": [a, b]}             a and b share at least one point
// Each operand is a GeoJSON geometry or Feature (usually {"var": ...}). A malformed value makes the
// operation throw, which evaluateLogic reports as an error (callers fail closed).
function geometryOf (v: unknown, op: string): Geometry {
  const g = (v !== null && typeof v === 'object' && (v as { type?: unknown }).type === 'Feature') ? (v as { geometry: unknown }).geometry : v
  if (g === null || typeof g !== 'object' || typeof (g as { type?: unknown }).type !== 'string' || !('coordinates' in g)) {
    throw new Error(`${op}: operands must be GeoJSON geometries or Features`)
  }
  return g as Geometry
}

// Reset with stepsLeft by evaluateLogic; evaluation is synchronous, so one counter will do.
let positionsLeft = MAX_GEO_POSITIONS

/** Counts an operation's work against the evaluation's positions before turf does it. */
function charge (op: string, work: number): void {
  positionsLeft -= work
  if (positionsLeft < 0) {
    throw new Error(`${op}: the geometries of one evaluation hold more than ${MAX_GEO_POSITIONS} positions ` +
      '(geoWithin of a line or polygon counts positions times positions); simplify the geometries or test points')
  }
}

const positions = (g: Geometry): number => geometryPositions(g as GeoJson)

function metersToGeometry (point: Geometry, target: Geometry): number {
  if (point.type !== 'Point') throw new Error('geoDistanceWithin: the first operand must be a Point')
  charge('geoDistanceWithin', 1 + positions(target))
  const p = point.coordinates as [number, number]
  switch (target.type) {
    case 'Point': return turf.distance(p, target.coordinates as [number, number], { units: 'meters' })
    case 'LineString': return turf.pointToLineDistance(p, turf.lineString(target.coordinates as number[][]), { units: 'meters', method: 'geodesic' })
    case 'MultiLineString': return Math.min(...(target.coordinates as number[][][]).map(l => turf.pointToLineDistance(p, turf.lineString(l), { units: 'meters', method: 'geodesic' })))
    case 'Polygon': case 'MultiPolygon':
      return Math.max(0, turf.pointToPolygonDistance(p, turf.feature(target) as Feature<Polygon | MultiPolygon>, { units: 'meters', method: 'geodesic' }))
    default: throw new Error(`geoDistanceWithin: unsupported target geometry ${target.type}`)
  }
}

jsonLogic.add_operation('geoWithin', (a: unknown, b: unknown) => {
  const g = geometryOf(a, 'geoWithin')
  const zone = geometryOf(b, 'geoWithin')
  const point = g.type === 'Point'
  charge('geoWithin', point ? 1 + positions(zone) : positions(g) * positions(zone))
  if (point && (zone.type === 'Polygon' || zone.type === 'MultiPolygon')) return turf.booleanPointInPolygon(g.coordinates as [number, number], zone)
  return turf.booleanWithin(g, zone)
})
jsonLogic.add_operation('geoDistanceWithin', (a: unknown, b: unknown, meters: unknown) => {
  if (typeof meters !== 'number' || !Number.isFinite(meters) || meters < 0) throw new Error('geoDistanceWithin: the third operand must be meters (a number >= 0)')
  return metersToGeometry(geometryOf(a, 'geoDistanceWithin'), geometryOf(b, 'geoDistanceWithin')) <= meters
})
jsonLogic.add_operation('geoIntersects', (a: unknown, b: unknown) => {
  const g = geometryOf(a, 'geoIntersects')
  const h = geometryOf(b, 'geoIntersects')
  charge('geoIntersects', positions(g) + positions(h))
  return turf.booleanIntersects(g, h)
})

const GEOJSON_TYPES = new Set(['Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon', 'GeometryCollection', 'Feature'])

/** A GeoJSON geometry or Feature written inline: data, not an operation (it has several keys). */
function isGeoJsonLiteral (v: object): boolean {
  const o = v as Record<string, unknown>
  return typeof o.type === 'string' && GEOJSON_TYPES.has(o.type) && ('coordinates' in o || 'geometry' in o || 'geometries' in o)
}

// `var` reads own properties only, and never through __proto__/constructor/prototype: a rule
// cannot reach Object.prototype or a function, whatever path it computes at run time.
jsonLogic.add_operation('var', function (this: unknown, a: unknown, b: unknown) {
  const notFound = b === undefined ? null : b
  if (a === undefined || a === null || a === '') return this
  let cur: unknown = this
  for (const part of String(a).split('.')) {
    if (UNSAFE_SEGMENTS.has(part) || cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part)) return notFound
    cur = (cur as Record<string, unknown>)[part]
    if (cur === undefined) return notFound
  }
  return cur
})

// Every operation, nested ones included, goes through jsonLogic.apply: counting there bounds an
// evaluation whatever the rule does with the data. Evaluation is synchronous, so one counter will do.
let stepsLeft = MAX_STEPS
const applyUnbounded = jsonLogic.apply.bind(jsonLogic)
jsonLogic.apply = ((logic: jsonLogic.RulesLogic, data?: unknown) => {
  if (--stepsLeft < 0) throw new Error(`rule evaluation exceeds ${MAX_STEPS} steps`)
  return applyUnbounded(logic, data)
}) as typeof jsonLogic.apply

/**
 * Checks a JsonLogic expression is well formed: known operators only, bounded depth and size,
 * and no literal `var` path through __proto__, constructor or prototype.
 */
export function checkLogic (rule: unknown, path: string): { path: string, reason: string } | null {
  const budget = { nodes: MAX_NODES }
  return checkNode(rule, path, 0, budget)
}

function checkNode (rule: unknown, path: string, depth: number, budget: { nodes: number }): { path: string, reason: string } | null {
  if (depth > MAX_DEPTH) return { path, reason: `nests deeper than ${MAX_DEPTH}` }
  if (--budget.nodes < 0) return { path, reason: `the rule has more than ${MAX_NODES} parts` }
  if (Array.isArray(rule)) {
    for (const [i, r] of rule.entries()) {
      const f = checkNode(r, `${path}[${i}]`, depth + 1, budget)
      if (f) return f
    }
    return null
  }
  if (rule === null || typeof rule !== 'object') return null
  if (isGeoJsonLiteral(rule)) return null
  const keys = Object.keys(rule)
  if (keys.length !== 1) return { path, reason: 'a JsonLogic operation is an object with exactly one operator key' }
  const op = keys[0]
  if (!OPERATORS.has(op)) return { path: `${path}.${op}`, reason: `unknown JsonLogic operator "${op}"` }
  const arg = (rule as Record<string, unknown>)[op]
  if (op === 'var') {
    const name = Array.isArray(arg) ? arg[0] : arg
    if (typeof name === 'string' && name.split('.').some(p => UNSAFE_SEGMENTS.has(p))) {
      return { path: `${path}.var`, reason: 'a var path may not use __proto__, constructor or prototype' }
    }
  }
  return checkNode(arg, `${path}.${op}`, depth + 1, budget)
}

export type LogicResult = { ok: true, value: unknown } | { ok: false, error: string }

/**
 * Evaluates a rule; a throwing rule is reported, never propagated (callers fail closed). A rule
 * that fails checkLogic (one stored before these checks existed) is not run.
 */
export function evaluateLogic (rule: unknown, data: unknown): LogicResult {
  const bad = checkLogic(rule, 'rule')
  if (bad) return { ok: false, error: `${bad.path} ${bad.reason}` }
  stepsLeft = MAX_STEPS
  positionsLeft = MAX_GEO_POSITIONS
  try {
    return { ok: true, value: jsonLogic.apply(rule as jsonLogic.RulesLogic, data) }
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) }
  }
}

export function truthy (v: unknown): boolean {
  return jsonLogic.truthy(v)
}
