import type { Actor } from '../context.js'
import { BUILT_IN_ROLES } from '../access/index.js'
import type { Queryable } from '../db.js'
import { evaluateLogic, truthy } from '../jsonlogic.js'
import * as rules from '../rules/index.js'
import type { ObjectDto } from '../objects/index.js'
import type { Guard } from './definition.js'
import * as sql from './sql.js'

/** One guard's outcome, as explain and GUARD_FAILED details show it. */
export interface GuardResult {
  type: Guard['type']
  requiredRole?: string
  operator?: string
  ruleId?: string
  /** The outcome: true passes. A guard that cannot be evaluated is false (fails closed). */
  evaluated: boolean
  reason: string
}

export interface GuardSubject { tenantId: string, actor: Actor, object: ObjectDto, now: Date }

interface Outcome { evaluated: boolean, reason: string }
type Pending =
  | { kind: 'done', outcome: Outcome }
  | { kind: 'logic', cond: rules.LogicCondition }
  | { kind: 'spatial', cond: rules.SpatialCondition }
interface Planned { label: Omit<GuardResult, 'evaluated' | 'reason'>, prefix: string, pending: Pending }

// Built-in roles, each a superset of the next (lib/access BUILT_IN_ROLES, strongest first).
const RANK: Record<string, number> = Object.fromEntries(BUILT_IN_ROLES.map((r, i) => [r, BUILT_IN_ROLES.length - i]))

/** A permission guard passes when the caller holds the role, or a built-in role above a built-in one. */
export function permissionOutcome (requiredRole: string, roles: readonly string[]): Outcome {
  if (roles.includes(requiredRole)) return { evaluated: true, reason: `you have role ${requiredRole}` }
  const need = RANK[requiredRole]
  const above = need === undefined ? undefined : roles.find(r => (RANK[r] ?? 0) > need)
  if (above !== undefined) return { evaluated: true, reason: `you have role ${above}, which includes ${requiredRole}` }
  const held = roles.length > 0 ? `you have ${roles.join(', ')}` : 'your token has no roles'
  return { evaluated: false, reason: `requires role ${requiredRole}; ${held}` }
}

function brief (v: unknown): string {
  const s = JSON.stringify(v) ?? String(v)
  return s.length > 200 ? `${s.slice(0, 197)}...` : s
}

/** JsonLogic over {object, user, now}; an error fails closed with the error in the reason. */
export function logicOutcome (cond: rules.LogicCondition, data: unknown): Outcome {
  const r = evaluateLogic(cond.rule, data)
  if (!r.ok) return { evaluated: false, reason: `the condition could not be evaluated (${r.error}); the guard fails closed` }
  if (truthy(r.value)) return { evaluated: true, reason: 'the condition holds' }
  return { evaluated: false, reason: cond.message ?? `the condition ${brief(cond.rule)} is false for this object` }
}

const FACTS: Record<Exclude<rules.SpatialOperator, 'dwithin'>, [string, string]> = {
  within: ["the object's geometry lies within the guard geometry", "the object's geometry does not lie within the guard geometry"],
  intersects: ["the object's geometry intersects the guard geometry", "the object's geometry does not intersect the guard geometry"],
  contains: ["the object's geometry contains the guard geometry", "the object's geometry does not contain the guard geometry"],
  disjoint: ["the object's geometry is disjoint from the guard geometry", "the object's geometry touches or overlaps the guard geometry, so it is not disjoint"]
}

/** Words for PostGIS's answer to one spatial condition (see sql.spatialTests). */
export function spatialOutcome (cond: rules.SpatialCondition, res: sql.SpatialResult): Outcome {
  if (res.error !== undefined || typeof res.passed !== 'boolean') {
    return { evaluated: false, reason: `the spatial condition could not be evaluated (${res.error ?? 'no result'}); the guard fails closed` }
  }
  let fact: string
  if (cond.operator === 'dwithin') {
    const d = `${(res.distanceMeters ?? NaN).toFixed(1)} m`
    fact = res.passed
      ? `the object's geometry is ${d} from the guard geometry, within the ${cond.distanceMeters} m allowed`
      : `the object's geometry is ${d} from the guard geometry; it must be within ${cond.distanceMeters} m`
  } else {
    fact = FACTS[cond.operator][res.passed ? 0 : 1]
  }
  if (res.passed) return { evaluated: true, reason: fact }
  return { evaluated: false, reason: cond.message !== undefined ? `${cond.message} (${fact})` : fact }
}

export function noGeometryOutcome (operator: string): Outcome {
  return { evaluated: false, reason: `the object has no geometry, so the spatial condition (${operator}) cannot be checked; the guard fails closed` }
}

/** A rule guard becomes the condition of the rule's published version, or fails closed saying why. */
export function resolveRule (ruleId: string, row: rules.GuardRuleRow | undefined): { prefix: string, pending: Pending } {
  if (row === undefined) return { prefix: '', pending: { kind: 'done', outcome: { evaluated: false, reason: `rule ${ruleId} does not exist; the guard fails closed` } } }
  if (row.published_version === null || row.published_content === null) {
    const reason = `rule ${row.key} has no published version (latest v${row.latest_version} is ${row.latest_status}); publish it to use it in a guard`
    return { prefix: '', pending: { kind: 'done', outcome: { evaluated: false, reason } } }
  }
  const cond = row.published_content.definition
  const prefix = `rule ${row.key} v${row.published_version}: `
  return row.kind === 'spatial'
    ? { prefix, pending: { kind: 'spatial', cond: cond as rules.SpatialCondition } }
    : { prefix, pending: { kind: 'logic', cond: cond as rules.LogicCondition } }
}

function plan (g: Guard, ruleRows: Map<string, rules.GuardRuleRow>, subject: GuardSubject): Planned {
  switch (g.type) {
    case 'permission':
      return { label: { type: g.type, requiredRole: g.requiredRole }, prefix: '', pending: { kind: 'done', outcome: permissionOutcome(g.requiredRole, subject.actor.roles) } }
    case 'jsonlogic':
      return { label: { type: g.type }, prefix: '', pending: { kind: 'logic', cond: g } }
    case 'spatial':
      return { label: { type: g.type, operator: g.operator }, prefix: '', pending: { kind: 'spatial', cond: g } }
    case 'rule':
      return { label: { type: g.type, ruleId: g.ruleId }, ...resolveRule(g.ruleId, ruleRows.get(g.ruleId)) }
  }
}

/**
 * Evaluates lists of guards (one list per transition) for one object and caller. Every guard
 * is evaluated (no short-circuit) so explain can show each outcome. Spatial conditions, inline
 * or from rules, go to PostGIS in one query; rules are loaded in one query.
 */
export async function evaluateGuardLists (db: Queryable, subject: GuardSubject, lists: Guard[][]): Promise<GuardResult[][]> {
  const ruleIds = [...new Set(lists.flat().flatMap(g => g.type === 'rule' ? [g.ruleId] : []))]
  const ruleRows = new Map((await rules.findGuardRules(db, subject.tenantId, ruleIds)).map(r => [r.id, r]))
  const planned = lists.map(list => list.map(g => plan(g, ruleRows, subject)))
  const hasGeometry = subject.object.geometry !== null
  const spatial = planned.flat().filter(p => p.pending.kind === 'spatial' && hasGeometry)
  const conds = spatial.map(p => (p.pending as { cond: rules.SpatialCondition }).cond)
  const answers = await sql.spatialTests(db, subject.tenantId, subject.object.id, conds)
  const spatialOutcomes = new Map(spatial.map((p, i) => [p, spatialOutcome(conds[i], answers[i])]))
  const data = { object: subject.object, user: { sub: subject.actor.sub, roles: subject.actor.roles }, now: subject.now.toISOString() }
  const outcomeOf = (p: Planned): Outcome => {
    switch (p.pending.kind) {
      case 'done': return p.pending.outcome
      case 'logic': return logicOutcome(p.pending.cond, data)
      case 'spatial': return spatialOutcomes.get(p) ?? noGeometryOutcome(p.pending.cond.operator)
    }
  }
  return planned.map(list => list.map(p => {
    const o = outcomeOf(p)
    return { ...p.label, evaluated: o.evaluated, reason: p.prefix + o.reason }
  }))
}
