import { validationError } from '../errors.js'
import { textFault } from '../storable.js'
import type { ColumnField, ColumnName, Field, ValueField } from './types.js'

/**
 * Bounds on client input (README "Bounds"). Anything beyond them is a 400 naming the path,
 * decided before any SQL is built, so hostile input costs the database nothing.
 */
export const LIMITS = {
  /** Combined filters (and/or/not) nested inside each other. */
  depth: 8,
  /** Filter objects in the whole tree, leaves and combinations. */
  nodes: 500,
  topLevelFilters: 100,
  /** contains/startsWith/endsWith leaves in the whole tree: each is a LIKE over every candidate row. */
  textFilters: 20,
  inValues: 1000,
  stringLength: 4096,
  geometryPositions: 10_000,
  pathSegments: 8,
  segmentLength: 128,
  sorts: 8,
  aggregations: 20,
  objectIds: 1000,
  relationTypes: 50,
  maxDepth: 5,
  /** Graph nodes returned; more sets truncated: true (docs/behaviour.md "Query service"). */
  graphNodes: 10_000,
  /** Rows the recursive walk may produce (one per object, depth and relation) before it is cut. */
  graphWalkRows: 100_000,
  /** A little over half the equator: every pair of points on Earth is closer. */
  distanceMeters: 20_100_000
} as const

const COLUMNS: Record<ColumnName, ColumnField> = {
  id: { kind: 'column', name: 'id', column: 'o.id', type: 'uuid', nullable: false },
  typeId: { kind: 'column', name: 'typeId', column: 'o.type_id', type: 'uuid', nullable: false },
  publicId: { kind: 'column', name: 'publicId', column: 'o.public_id', type: 'text', nullable: false },
  workflowState: { kind: 'column', name: 'workflowState', column: 'o.workflow_state', type: 'text', nullable: true },
  createdAt: { kind: 'column', name: 'createdAt', column: 'o.created_at', type: 'time', nullable: false },
  updatedAt: { kind: 'column', name: 'updatedAt', column: 'o.updated_at', type: 'time', nullable: false }
}

export const FIELD_NAMES = `${Object.keys(COLUMNS).join(', ')}, geometry or attributes.<name>`

/** A client string of bounded length that Postgres can hold; VALIDATION_ERROR at `at` otherwise. */
export function requireText (v: unknown, at: string, what = 'a string'): string {
  if (typeof v !== 'string') throw validationError(at, `must be ${what}`)
  if (v.length > LIMITS.stringLength) throw validationError(at, `must be at most ${LIMITS.stringLength} characters`)
  const fault = textFault(v)
  if (fault !== null) throw validationError(at, fault)
  return v
}

/**
 * A field name -> Field. Attribute keys may hold any characters but the dot (they are bound
 * as a text[] parameter, never spliced into SQL).
 */
export function resolveField (raw: unknown, at: string): Field {
  const name = requireText(raw, at, `a field name: ${FIELD_NAMES}`)
  if (name === 'geometry') return { kind: 'geometry', name }
  if (Object.hasOwn(COLUMNS, name)) return COLUMNS[name as ColumnName]
  if (!name.startsWith('attributes.')) throw validationError(at, `unknown field "${name}"; use ${FIELD_NAMES}`)
  const path = name.slice('attributes.'.length).split('.')
  if (path.length > LIMITS.pathSegments || path.some(p => p.length === 0 || p.length > LIMITS.segmentLength)) {
    throw validationError(at, `attributes.<name> takes up to ${LIMITS.pathSegments} dot-separated keys of 1 to ${LIMITS.segmentLength} characters`)
  }
  return { kind: 'attribute', name, path }
}

/** Like resolveField, for sorts and aggregations, where geometry has no order. */
export function resolveValueField (raw: unknown, at: string): ValueField {
  const f = resolveField(raw, at)
  if (f.kind === 'geometry') throw validationError(at, 'geometry cannot be sorted or aggregated')
  return f
}
