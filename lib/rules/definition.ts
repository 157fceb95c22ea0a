import { checkLogic } from '../jsonlogic.js'
import { validateGeometry, type Geometry } from '../geo/index.js'
import { validationError } from '../errors.js'
import { SPATIAL_OPERATORS } from './schema.js'

export type RuleKind = 'jsonlogic' | 'spatial'
export type SpatialOperator = typeof SPATIAL_OPERATORS[number]

/** A JsonLogic condition over {object, user: {sub, roles}, now}. */
export interface LogicCondition { rule: unknown, message?: string }

/** A spatial condition on the object's geometry, evaluated by PostGIS. */
export interface SpatialCondition { operator: SpatialOperator, geometry: Geometry, distanceMeters?: number, message?: string }

export type RuleDefinition = LogicCondition | SpatialCondition

/** What each rule version stores (the schema registry shows it with the rule's kind). */
export interface RuleContent { name: string, definition: RuleDefinition }

export interface Fault { path: string, reason: string }

function unexpectedField (c: Record<string, unknown>, allowed: string[], path: string, what: string): Fault | null {
  const extra = Object.keys(c).find(k => !allowed.includes(k))
  return extra === undefined ? null : { path: `${path}.${extra}`, reason: `is not a field of ${what}` }
}

/**
 * Checks a JsonLogic condition: `rule` present and well formed. `also` lists the fields the
 * container adds (an inline guard's `type`).
 */
export function checkLogicCondition (c: Record<string, unknown>, path: string, also: string[] = []): Fault | null {
  const extra = unexpectedField(c, ['rule', 'message', ...also], path, 'a jsonlogic condition (rule, message)')
  if (extra) return extra
  if (!('rule' in c)) return { path: `${path}.rule`, reason: 'is required' }
  return checkLogic(c.rule, `${path}.rule`)
}

/** Checks a spatial condition: a known operator, a valid GeoJSON geometry, distanceMeters exactly for dwithin. */
export function checkSpatialCondition (c: Record<string, unknown>, path: string, also: string[] = []): Fault | null {
  const extra = unexpectedField(c, ['operator', 'geometry', 'distanceMeters', 'message', ...also], path, 'a spatial condition (operator, geometry, distanceMeters, message)')
  if (extra) return extra
  if (typeof c.operator !== 'string' || !(SPATIAL_OPERATORS as readonly string[]).includes(c.operator)) {
    return { path: `${path}.operator`, reason: `is required: one of ${SPATIAL_OPERATORS.join(', ')}` }
  }
  if (c.geometry === undefined) return { path: `${path}.geometry`, reason: 'is required' }
  const g = validateGeometry(c.geometry, `${path}.geometry`)
  if (g) return g
  if (c.operator === 'dwithin' && typeof c.distanceMeters !== 'number') {
    return { path: `${path}.distanceMeters`, reason: 'is required for dwithin (meters on the sphere)' }
  }
  if (c.operator !== 'dwithin' && c.distanceMeters !== undefined) {
    return { path: `${path}.distanceMeters`, reason: 'applies to dwithin only' }
  }
  return null
}

/** Throws VALIDATION_ERROR naming the path (definition.*) when a rule's definition does not fit its kind. */
export function checkRuleDefinition (kind: RuleKind, def: Record<string, unknown>): void {
  const f = kind === 'jsonlogic' ? checkLogicCondition(def, 'definition') : checkSpatialCondition(def, 'definition')
  if (f) throw validationError(f.path, f.reason)
}
