import { validationError } from '../errors.js'
import * as rules from '../rules/index.js'

export type Guard =
  | { type: 'permission', requiredRole: string }
  | ({ type: 'jsonlogic' } & rules.LogicCondition)
  | ({ type: 'spatial' } & rules.SpatialCondition)
  | { type: 'rule', ruleId: string }

export interface State { name: string, final?: boolean }
export interface Transition { from: string[] | '*', targetState: string, guards: Guard[] }

/** The versioned part of a workflow: every create or PATCH stores a new one, effective at once. */
export interface WorkflowDefinition {
  name: string
  initialState: string
  states: State[]
  transitions: Transition[]
}

type Fault = rules.Fault

function checkGuard (g: Record<string, unknown>, path: string): Fault | null {
  switch (g.type) {
    case 'permission': {
      const extra = Object.keys(g).find(k => k !== 'type' && k !== 'requiredRole')
      if (extra !== undefined) return { path: `${path}.${extra}`, reason: 'is not a field of a permission guard (requiredRole)' }
      return typeof g.requiredRole === 'string' ? null : { path: `${path}.requiredRole`, reason: 'is required' }
    }
    case 'jsonlogic': return rules.checkLogicCondition(g, path, ['type'])
    case 'spatial': return rules.checkSpatialCondition(g, path, ['type'])
    default: {
      const extra = Object.keys(g).find(k => k !== 'type' && k !== 'ruleId')
      if (extra !== undefined) return { path: `${path}.${extra}`, reason: 'is not a field of a rule guard (ruleId)' }
      return typeof g.ruleId === 'string' ? null : { path: `${path}.ruleId`, reason: 'is required' }
    }
  }
}

function checkStates (def: WorkflowDefinition): Fault | null {
  const seen = new Set<string>()
  for (const [i, s] of def.states.entries()) {
    if (s.name === '*') return { path: `states[${i}].name`, reason: '"*" is reserved (it means every state in transitions[].from)' }
    if (seen.has(s.name)) return { path: `states[${i}].name`, reason: `state "${s.name}" is declared twice` }
    seen.add(s.name)
  }
  if (!seen.has(def.initialState)) return { path: 'initialState', reason: `"${def.initialState}" is not one of the states` }
  return null
}

/** The source states a transition covers; "*" is every non-final state but the target, plus unknown ones. */
function sources (def: WorkflowDefinition, t: Transition): string[] {
  if (t.from !== '*') return t.from
  return [...def.states.filter(s => s.final !== true && s.name !== t.targetState).map(s => s.name), '\u0000other']
}

function checkTransition (def: WorkflowDefinition, t: Transition, i: number, final: Set<string>, names: Set<string>): Fault | null {
  const path = `transitions[${i}]`
  if (!names.has(t.targetState)) return { path: `${path}.targetState`, reason: `"${t.targetState}" is not one of the states` }
  if (t.from !== '*') {
    for (const [j, f] of t.from.entries()) {
      if (!names.has(f)) return { path: `${path}.from[${j}]`, reason: `"${f}" is not one of the states` }
      if (final.has(f)) return { path: `${path}.from[${j}]`, reason: `"${f}" is a final state; it has no outgoing transitions` }
    }
  }
  for (const [j, g] of t.guards.entries()) {
    const f = checkGuard(g as unknown as Record<string, unknown>, `${path}.guards[${j}]`)
    if (f) return f
  }
  return null
}

/** Every (from, target) pair has at most one transition, so explain and transitions are unambiguous. */
function checkDuplicates (def: WorkflowDefinition): Fault | null {
  const owner = new Map<string, number>()
  for (const [i, t] of def.transitions.entries()) {
    for (const from of sources(def, t)) {
      const key = `${from}\u0001${t.targetState}`
      const earlier = owner.get(key)
      if (earlier !== undefined) {
        const what = from === '\u0000other' ? 'any state' : `"${from}"`
        return { path: `transitions[${i}]`, reason: `duplicates transitions[${earlier}]: both move from ${what} to "${t.targetState}"` }
      }
      owner.set(key, i)
    }
  }
  return null
}

/**
 * Checks a whole definition (after JSON Schema): states unique, the initial state exists, every
 * transition names known states and leaves no final state, guards well formed, no (from, target)
 * pair defined twice. Throws VALIDATION_ERROR naming the path of the first fault.
 */
export function checkWorkflowDefinition (def: WorkflowDefinition): void {
  const fault = checkStates(def) ?? (() => {
    const names = new Set(def.states.map(s => s.name))
    const final = new Set(def.states.filter(s => s.final === true).map(s => s.name))
    for (const [i, t] of def.transitions.entries()) {
      const f = checkTransition(def, t, i, final, names)
      if (f) return f
    }
    return checkDuplicates(def)
  })()
  if (fault) throw validationError(fault.path, fault.reason)
}

/** Fills defaults so stored definitions have one shape (final always a boolean, guards always an array). */
export function normalizeDefinition (def: WorkflowDefinition): WorkflowDefinition {
  return {
    name: def.name,
    initialState: def.initialState,
    states: def.states.map(s => ({ name: s.name, final: s.final === true })),
    transitions: def.transitions.map(t => ({ from: t.from, targetState: t.targetState, guards: t.guards ?? [] }))
  }
}

/** Where each rule guard sits, for the existence check when the definition is saved. */
export function ruleReferences (def: WorkflowDefinition): Array<{ ruleId: string, path: string }> {
  return def.transitions.flatMap((t, i) => t.guards.flatMap((g, j) =>
    g.type === 'rule' ? [{ ruleId: g.ruleId, path: `transitions[${i}].guards[${j}].ruleId` }] : []))
}

/**
 * The transitions that leave `state`, in definition order. "*" covers every non-final state
 * (including one a later version no longer declares, so no object is stranded) except the target.
 */
export function transitionsFrom (def: WorkflowDefinition, state: string): Transition[] {
  const isFinal = def.states.some(s => s.name === state && s.final === true)
  return def.transitions.filter(t => t.from === '*' ? !isFinal && t.targetState !== state : t.from.includes(state))
}
