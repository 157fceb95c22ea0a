import type { ServiceContext } from '../context.js'
import type { Queryable } from '../db.js'
import { AppError } from '../errors.js'
import { parse } from '../validation.js'
import { runWrite } from '../pipeline.js'
import { workflowTransitionsTotal } from '../metrics.js'
import * as access from '../access/index.js'
import * as objects from '../objects/index.js'
import * as objectTypes from '../object-types/index.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import { transitionsFrom } from './definition.js'
import { evaluateGuardLists, type GuardResult } from './guards.js'

export interface ExplainResult {
  objectId: string
  currentState: string | null
  workflowId: string | null
  workflowVersion: number | null
  availableTransitions: Array<{ targetState: string, allowed: boolean, guards: GuardResult[] }>
}

/** The workflow an object follows: the latest version of the one its type's published version names. */
async function workflowOf (db: Queryable, tenantId: string, typeId: string): Promise<sql.WorkflowWithLatest | null> {
  const pub = await objectTypes.findPublished(db, tenantId, typeId)
  const workflowId = pub?.definition.workflowId ?? null
  return workflowId === null ? null : sql.findWorkflow(db, tenantId, workflowId)
}

/**
 * The state transitions start from. An object created before its type had a workflow holds
 * null; it is treated as being in the workflow's initial state.
 */
function effectiveState (object: objects.ObjectDto, wf: sql.WorkflowWithLatest): string {
  return object.workflowState ?? wf.definition.initialState
}

function subjectOf (ctx: ServiceContext, object: objects.ObjectDto) {
  return { tenantId: ctx.tenantId, actor: ctx.actor, object, now: new Date() }
}

/**
 * Every transition from the current state, allowed or not, with each guard's outcome and reason.
 * `allowed` answers "would this caller's transition succeed now": every guard passes AND the
 * caller holds objects:transition (without it the transition is a 403 whatever the guards; the
 * guards are still evaluated and listed, so the caller sees what else stands in the way).
 */
export async function explainTransitions (ctx: ServiceContext, id: string): Promise<ExplainResult> {
  const object = await objects.getObject(ctx, id, {})
  const wf = await workflowOf(ctx.db, ctx.tenantId, object.typeId)
  if (wf === null) return { objectId: object.id, currentState: object.workflowState, workflowId: null, workflowVersion: null, availableTransitions: [] }
  const state = effectiveState(object, wf)
  const moves = transitionsFrom(wf.definition, state)
  const results = await evaluateGuardLists(ctx.db, subjectOf(ctx, object), moves.map(t => t.guards))
  const mayTransition = access.can(ctx.permissions, 'objects', 'transition')
  return {
    objectId: object.id,
    currentState: state,
    workflowId: wf.id,
    workflowVersion: wf.latest_version,
    availableTransitions: moves.map((t, i) => ({ targetState: t.targetState, allowed: mayTransition && results[i].every(g => g.evaluated), guards: results[i] }))
  }
}

/**
 * Moves an object to `targetState` through the write pipeline. The object row is locked first,
 * so of two concurrent transitions the second sees the first's result (and fails with
 * INVALID_TRANSITION or VERSION_CONFLICT). A refusal rolls back: no version, audit or outbox event.
 */
export async function transitionObject (ctx: ServiceContext, id: string, body: unknown, ifMatch: number | null): Promise<objects.ObjectDto> {
  const input = parse<{ targetState: string, comment?: string }>(schema.TransitionBody, body)
  const done = await runWrite(ctx, { resource: 'objects', action: 'transition', limit: 'workflow_run_count' }, async w => {
    const current = await objects.lockForChange(ctx, w.tx, id, ifMatch)
    const object = objects.toObjectDto(current)
    const wf = await workflowOf(w.tx, ctx.tenantId, current.type_id)
    if (wf === null) {
      throw new AppError('INVALID_TRANSITION', 'the object type has no workflow, so its objects have no transitions', { currentState: null, targetState: input.targetState })
    }
    const state = effectiveState(object, wf)
    const moves = transitionsFrom(wf.definition, state)
    const move = moves.find(t => t.targetState === input.targetState)
    if (move === undefined) {
      const targets = moves.map(t => t.targetState)
      const allowed = targets.length > 0 ? `possible targets: ${targets.join(', ')}` : 'no transition leaves it'
      throw new AppError('INVALID_TRANSITION', `workflow ${wf.key} has no transition from "${state}" to "${input.targetState}"; ${allowed}`,
        { currentState: state, targetState: input.targetState, availableTargets: targets })
    }
    const [guards] = await evaluateGuardLists(w.tx, subjectOf(ctx, object), [move.guards])
    const failed = guards.filter(g => !g.evaluated)
    if (failed.length > 0) {
      throw new AppError('GUARD_FAILED', `transition to "${input.targetState}" is blocked: ${failed.map(g => g.reason).join('; ')}`,
        { currentState: state, targetState: input.targetState, guards })
    }
    const row = await objects.writeVersion(w.tx, current, {
      operation: 'transitioned', attributes: current.attributes, geometry: undefined, workflowState: input.targetState,
      validFrom: null, actor: { sub: ctx.actor.sub, roles: ctx.actor.roles }
    })
    objects.recordObjectChange(w, 'transitioned', row, {
      workflowId: wf.id, workflowVersion: wf.latest_version, fromState: current.workflow_state, toState: input.targetState, comment: input.comment ?? null
    }, current)
    return { dto: objects.toObjectDto(row), workflowId: wf.id }
  })
  workflowTransitionsTotal.inc({ workflow_id: done.workflowId, state: input.targetState })
  return done.dto
}
