import { validationError } from '../errors.js'
import { isUuid } from '../db.js'
import { ajv } from '../validation.js'
import { Timestamp } from '../schemas.js'
import { findAntipodalEdge, geometryPositions, validateGeometry, type Geometry } from '../geo/index.js'
import { LIMITS, requireText, resolveField } from './fields.js'
import type { ColumnField, CompareOp, FilterNode, Scalar, ValueField } from './types.js'

// Filter JSON -> typed FilterNode. Every fault is a VALIDATION_ERROR whose `field` is the path
// of the offending member, e.g. filters[0].filters[1].operator (docs/behaviour.md "Query service").

const SHORT: Record<string, string> = { eq: 'equals', ne: 'notEquals', gt: 'greaterThan', gte: 'greaterThanOrEqual', lt: 'lessThan', lte: 'lessThanOrEqual' }
const COMPARE: Record<string, CompareOp> = { equals: 'eq', notEquals: 'ne', greaterThan: 'gt', greaterThanOrEqual: 'gte', lessThan: 'lt', lessThanOrEqual: 'lte' }
const TEXT_OPS = ['contains', 'startsWith', 'endsWith'] as const
const PRESENCE_OPS = ['exists', 'notExists', 'isNull', 'isNotNull'] as const
const SPATIAL_OPS = ['within', 'contains', 'intersects'] as const
const COMBINATORS = ['and', 'or', 'not'] as const

export const OPERATORS = [...COMBINATORS, ...Object.keys(COMPARE), ...Object.keys(SHORT), 'in', 'notIn', ...TEXT_OPS,
  ...PRESENCE_OPS, 'within', 'intersects', 'dwithin', 'bbox']

const isTimestamp = ajv.compile(Timestamp)

interface Budget { nodes: number, texts: number }

function isRecord (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function rejectUnknownKeys (raw: Record<string, unknown>, allowed: readonly string[], at: string): void {
  const extra = Object.keys(raw).find(k => !allowed.includes(k))
  if (extra !== undefined) throw validationError(`${at}.${extra}`, `is not allowed here; a filter has ${allowed.join(', ')}`)
}

/** The top-level `filters` array: its members combine with AND. */
export function parseFilters (raw: unknown, at = 'filters'): FilterNode | null {
  if (raw === undefined) return null
  if (!Array.isArray(raw)) throw validationError(at, 'must be an array of filters')
  if (raw.length > LIMITS.topLevelFilters) throw validationError(at, `must hold at most ${LIMITS.topLevelFilters} filters`)
  if (raw.length === 0) return null
  const budget = { nodes: 0, texts: 0 }
  const children = raw.map((f, i) => parseNode(f, `${at}[${i}]`, 1, budget))
  return children.length === 1 ? children[0] : { kind: 'and', children }
}

function parseNode (raw: unknown, at: string, depth: number, budget: Budget): FilterNode {
  if (!isRecord(raw)) throw validationError(at, 'must be a filter object: {field, operator, value} or {operator: and|or|not, filters}')
  if (++budget.nodes > LIMITS.nodes) throw validationError(at, `a query holds at most ${LIMITS.nodes} filters in all`)
  const operator = raw.operator
  if (typeof operator !== 'string' || !OPERATORS.includes(operator)) {
    throw validationError(`${at}.operator`, `must be one of ${OPERATORS.join(', ')}`)
  }
  if ((COMBINATORS as readonly string[]).includes(operator)) return parseCombined(raw, operator as 'and' | 'or' | 'not', at, depth, budget)
  const leaf = parseLeaf(raw, SHORT[operator] ?? operator, at)
  if (leaf.kind === 'text' && ++budget.texts > LIMITS.textFilters) throw validationError(at, `a query holds at most ${LIMITS.textFilters} text filters (contains, startsWith, endsWith) in all`)
  return leaf
}

function parseCombined (raw: Record<string, unknown>, kind: 'and' | 'or' | 'not', at: string, depth: number, budget: Budget): FilterNode {
  rejectUnknownKeys(raw, ['operator', 'filters'], at)
  if (depth > LIMITS.depth) throw validationError(at, `combined filters nest at most ${LIMITS.depth} deep`)
  const list = raw.filters
  if (!Array.isArray(list) || list.length === 0) throw validationError(`${at}.filters`, `must be a non-empty array of filters (${kind} combines them)`)
  if (list.length > LIMITS.nodes) throw validationError(`${at}.filters`, `a query holds at most ${LIMITS.nodes} filters in all`)
  return { kind, children: list.map((f, i) => parseNode(f, `${at}.filters[${i}]`, depth + 1, budget)) }
}

function parseLeaf (raw: Record<string, unknown>, operator: string, at: string): FilterNode {
  rejectUnknownKeys(raw, operator === 'dwithin' ? ['field', 'operator', 'value', 'distanceMeters'] : ['field', 'operator', 'value'], at)
  if (raw.field === undefined) throw validationError(`${at}.field`, 'is required')
  const field = resolveField(raw.field, `${at}.field`)
  const value = raw.value
  const vAt = `${at}.value`
  if ((PRESENCE_OPS as readonly string[]).includes(operator)) {
    if (value !== undefined && value !== null) throw validationError(vAt, `${operator} takes no value`)
    return { kind: 'presence', field, op: operator as typeof PRESENCE_OPS[number] }
  }
  if (field.kind === 'geometry') return parseSpatial(raw, operator, at)
  if (['within', 'intersects', 'dwithin', 'bbox'].includes(operator)) throw validationError(`${at}.operator`, `${operator} applies to the field geometry`)
  if (operator in COMPARE) {
    const ordered = operator !== 'equals' && operator !== 'notEquals'
    if (ordered && field.kind === 'column' && field.type === 'uuid') throw validationError(`${at}.operator`, `${field.name} takes only equals, notEquals, in, notIn and the presence operators`)
    return { kind: 'compare', field, op: COMPARE[operator], value: comparable(field, value, ordered, vAt) }
  }
  if (operator === 'in' || operator === 'notIn') return { kind: 'in', field, negate: operator === 'notIn', values: valueList(field, value, vAt) }
  if (field.kind === 'column' && field.type !== 'text') throw validationError(`${at}.operator`, `${operator} applies to strings, not to ${field.name}`)
  return { kind: 'text', field, op: operator as typeof TEXT_OPS[number], value: requireText(value, vAt) }
}

function columnValue (field: ColumnField, v: unknown, at: string): string {
  if (field.type === 'uuid') {
    if (typeof v !== 'string' || !isUuid(v)) throw validationError(at, `must be a UUID (${field.name})`)
    return v
  }
  if (field.type === 'time') {
    if (typeof v !== 'string' || !isTimestamp(v)) throw validationError(at, `must be an ISO 8601 timestamp with time zone (${field.name})`)
    return v
  }
  return requireText(v, at)
}

function scalar (field: ValueField, v: unknown, at: string): Scalar {
  if (field.kind === 'column') return columnValue(field, v, at)
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw validationError(at, 'must be a finite number')
    return v
  }
  if (typeof v === 'boolean') return v
  if (typeof v === 'string') return requireText(v, at)
  throw validationError(at, v === null ? 'must not be null; use isNull or notExists' : 'must be a string, number or boolean')
}

/** Order comparisons: numbers numerically, strings as text, createdAt/updatedAt as times. */
function comparable (field: ValueField, v: unknown, ordered: boolean, at: string): Scalar {
  const s = scalar(field, v, at)
  if (ordered && typeof s === 'boolean') throw validationError(at, 'an order comparison needs a number or a string')
  return s
}

function valueList (field: ValueField, v: unknown, at: string): Scalar[] {
  if (!Array.isArray(v) || v.length === 0) throw validationError(at, 'must be a non-empty array')
  if (v.length > LIMITS.inValues) throw validationError(at, `must hold at most ${LIMITS.inValues} values`)
  return v.map((x, i) => scalar(field, x, `${at}[${i}]`))
}

function parseSpatial (raw: Record<string, unknown>, operator: string, at: string): FilterNode {
  const vAt = `${at}.value`
  if (operator === 'bbox') return { kind: 'bbox', bounds: bbox(raw.value, vAt) }
  if (operator === 'dwithin') return { kind: 'dwithin', geometry: onSphere(geometry(raw.value, vAt), vAt), meters: distance(raw.distanceMeters, `${at}.distanceMeters`) }
  if (!(SPATIAL_OPS as readonly string[]).includes(operator)) throw validationError(`${at}.operator`, `geometry takes within, contains, intersects, dwithin, bbox, exists, notExists, isNull or isNotNull, not ${operator}`)
  return { kind: 'spatial', op: operator as typeof SPATIAL_OPS[number], geometry: geometry(raw.value, vAt) }
}

function geometry (v: unknown, at: string): Geometry {
  const fault = validateGeometry(v, at)
  if (fault) throw validationError(fault.path, fault.reason)
  const g = v as Geometry
  if (geometryPositions(g) > LIMITS.geometryPositions) throw validationError(at, `a filter geometry holds at most ${LIMITS.geometryPositions} positions`)
  return g
}

/** dwithin measures on the sphere (geography), which has no edge between opposite points. */
function onSphere (g: Geometry, at: string): Geometry {
  const fault = findAntipodalEdge(g, at)
  if (fault) throw validationError(fault.path, fault.reason)
  return g
}

function distance (v: unknown, at: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > LIMITS.distanceMeters) {
    throw validationError(at, `dwithin needs distanceMeters, a number from 0 to ${LIMITS.distanceMeters}`)
  }
  return v
}

function bbox (v: unknown, at: string): [number, number, number, number] {
  if (!Array.isArray(v) || v.length !== 4 || v.some(x => typeof x !== 'number' || !Number.isFinite(x))) {
    throw validationError(at, 'must be [minX, minY, maxX, maxY], four finite numbers')
  }
  const [minX, minY, maxX, maxY] = v as number[]
  if (minX < -180 || maxX > 180 || minY < -90 || maxY > 90) throw validationError(at, 'must lie within longitude -180..180 and latitude -90..90')
  if (minX > maxX || minY > maxY) throw validationError(at, 'needs minX <= maxX and minY <= maxY')
  return [minX, minY, maxX, maxY]
}
