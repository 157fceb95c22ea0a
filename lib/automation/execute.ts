import { performance } from 'node:perf_hooks'
import type { ServiceContext } from '../context.js'
import { isAppError, isTransient } from '../errors.js'
import { withTransaction, type Tx } from '../db.js'
import { runWrite, type WriteSpec } from '../pipeline.js'
import { evaluateLogic, truthy } from '../jsonlogic.js'
import * as objects from '../objects/index.js'
import * as workflows from '../workflows/index.js'
import { WEBHOOK_DELIVER } from '../queues/contracts.js'
import * as sql from './sql.js'
import type { Effect, RuleContent } from './definition.js'
import { evaluateMatches, type MatchSpec } from './match.js'
import { render, renderText, TemplateError, usesObject, type TemplateScope } from './templates.js'
import { refusalOf } from './refusal.js'
import { LRUCache } from 'lru-cache'
import { ruleContext } from './context.js'
import { finishRun, type Step } from './finish.js'
import { redactHeaders, redactUrl } from './http.js'

// One run: match -> condition -> effect, in ONE transaction that holds the run row. A database
// effect (transition, update) runs in that transaction through the same services as REST, and the
// effect's license count (countEffect) with it, so both commit together with the run's success or
// not at all; a run that is no longer `queued` when its job arrives (a redelivery, a raced
// worker) is left alone.

type Outcome = { status: sql.RunStatus, error?: { code: string, message: string }, extra?: Partial<sql.RunRow> }

function step (phase: Step['phase'], t0: number, ok: boolean, detail: unknown): Step {
  return { phase, ok, detail, durationMs: Math.round((performance.now() - t0) * 1000) / 1000 }
}

function failure (err: unknown): { code: string, message: string } | null {
  if (err instanceof TemplateError) return { code: 'TEMPLATE_ERROR', message: err.message }
  // A concurrent change to the object, or a database gone for a moment, is worth another try (the
  // job is retried), not a failure.
  if (isAppError(err) && !isTransient(err)) return { code: err.code, message: err.message }
  return null
}

/** The object a database effect acts on: the objectId template, or the triggering object. */
function targetId (effect: Extract<Effect, { objectId?: string }>, scope: TemplateScope): string {
  if (effect.objectId !== undefined) return renderText(effect.objectId, scope, 'effect.objectId')
  const id = (scope.object as { id?: unknown } | null)?.id
  if (typeof id !== 'string') throw new TemplateError('object.id', 'effect.objectId')
  return id
}

async function applyDbEffect (ctx: ServiceContext, effect: Effect, scope: TemplateScope): Promise<unknown> {
  if (effect.type === 'workflow.transition') {
    const o = await workflows.transitionObject(ctx, targetId(effect, scope), { targetState: effect.targetState }, null)
    return { objectId: o.id, workflowState: o.workflowState, version: o.version }
  }
  if (effect.type === 'object.update') {
    const id = targetId(effect, scope)
    const attributes = render(effect.attributes, scope, 'effect.attributes')
    // A merge patch onto whatever version is current under the object's row lock (no If-Match).
    const o = await objects.patchObject(ctx, id, { attributes }, null)
    return { objectId: o.id, version: o.version }
  }
  throw new Error(`not a database effect: ${effect.type}`)
}

/** Renders the outgoing call once; every attempt sends these exact bytes. */
function renderWebhook (effect: Extract<Effect, { type: 'webhook' }>, scope: TemplateScope) {
  const headers = Object.fromEntries(Object.entries(effect.headers ?? {}).map(([k, v]) => [k, renderText(v, scope, `effect.headers.${k}`)]))
  const method = effect.method ?? 'POST'
  const body = method === 'GET' ? null : JSON.stringify(render(effect.body ?? {}, scope, 'effect.body'))
  return { url: renderText(effect.url, scope, 'effect.url'), method, headers, body }
}

const objectMentions = new WeakMap<RuleContent, boolean>()

/** Whether the effect's templates use {{object.*}} (the object is only read when they do). */
function mentionsObject (content: RuleContent): boolean {
  let m = objectMentions.get(content)
  if (m === undefined) { m = usesObject(content.effect); objectMentions.set(content, m) }
  return m
}

/** The object `{{object.*}}` refers to: the triggering one, or for other triggers the effect's target. */
async function scopeOf (ctx: ServiceContext, run: sql.RunRow, content: RuleContent): Promise<TemplateScope> {
  const scope: TemplateScope = { object: null, payload: run.input, tenant: ctx.tenantId, ruleId: run.rule_id, runId: run.id, now: new Date().toISOString() }
  const input = run.input as { object?: Record<string, unknown> } | null
  if (run.trigger.type === 'object.event' && input?.object) scope.object = input.object
  else if (content.effect.type !== 'webhook' && content.effect.objectId !== undefined && mentionsObject(content)) {
    const id = renderText(content.effect.objectId, scope, 'effect.objectId')
    scope.object = await objects.getObject(ctx, id, {}).catch(() => null)
  }
  return scope
}

async function runEffect (ctx: ServiceContext, tx: Tx, run: sql.RunRow, content: RuleContent, dryRun: boolean, steps: Step[]): Promise<Outcome> {
  const t0 = performance.now()
  try {
    const scope = await scopeOf(ctx, run, content)
    const effect = content.effect
    const outgoing = effect.type === 'webhook' ? renderWebhook(effect, scope) : null
    const request = outgoing === null ? null : { url: redactUrl(outgoing.url), method: outgoing.method, headers: redactHeaders(outgoing.headers), body: outgoing.body === null ? null : JSON.parse(outgoing.body) }
    if (dryRun) {
      steps.push(step('effect', t0, true, request === null ? { dryRun: true, effect: effect.type } : { dryRun: true, wouldSend: request }))
      return request === null ? { status: 'dry_run' } : { status: 'dry_run', extra: { request } }
    }
    // No savepoint: a refused effect rolls the whole run transaction back (EffectRefused) and its
    // outcome is recorded in a fresh one; success costs two round trips less.
    const detail = await applyEffect({ ...ctx, db: tx, deferChanges: true }, run, effect, scope).catch(err => {
      const f = failure(err)
      if (f === null) throw err
      steps.push(step('effect', t0, false, f))
      throw new EffectRefused({ status: 'failed', error: f })
    })
    steps.push(step('effect', t0, true, detail))
    return request === null ? { status: 'succeeded' } : { status: 'running', extra: { request, outgoing } }
  } catch (err) {
    if (err instanceof EffectRefused) throw err
    const f = failure(err)
    if (f === null) throw err
    steps.push(step('effect', t0, false, f))
    return { status: 'failed', error: f }
  }
}

/**
 * Applies the effect in the run's transaction (`ctx.db`), then counts it (countEffect): both
 * commit with the run's outcome or neither does. A webhook effect's part here is queuing its
 * first attempt (webhook.ts sends it once this transaction has committed).
 */
async function applyEffect (ctx: ServiceContext, run: sql.RunRow, effect: Effect, scope: TemplateScope): Promise<unknown> {
  const detail = effect.type === 'webhook' ? await queueFirstAttempt(ctx, run.id) : await applyDbEffect(ctx, effect, scope)
  await countEffect(ctx, effect)
  return detail
}

async function queueFirstAttempt (ctx: ServiceContext, runId: string): Promise<unknown> {
  await ctx.jobs!.send(WEBHOOK_DELIVER.name, { tenantId: ctx.tenantId, runId, attempt: 1 }, { db: ctx.db })
  return { queued: 'webhook.deliver', attempt: 1 }
}

/**
 * What a run counts against the license (docs/behaviour.md "Licensing": `workflow_run_count` counts
 * transitions plus automation effects), decided here only: one unit for every run that applies
 * its effect (a webhook effect once, when its first attempt is queued, however many attempts
 * follow; a replay is a new run); nothing for a dry run, a skipped run or one that fails before
 * its effect. The unit is this empty write through the pipeline in the run's transaction: its
 * record hook adds the month's +1, its quota hook refuses the N+1st with LICENSE_LIMIT_EXCEEDED
 * and its before-hook an expired license with LICENSE_EXPIRED, and a refusal rolls the effect
 * back with the run. It comes after the effect, so its counter locks follow the effect's row
 * locks (lib/license README, lock order). A transition effect is such a write already
 * (lib/workflows `transitionObject` names the limit, for REST and runs alike): counted here too,
 * it would count twice.
 */
const EFFECT_UNIT: WriteSpec = { resource: 'automationRules', action: 'execute', limit: 'workflow_run_count' }

async function countEffect (ctx: ServiceContext, effect: Effect): Promise<void> {
  if (effect.type === 'workflow.transition') return
  await runWrite(ctx, EFFECT_UNIT, async () => undefined)
}

/** A database effect was refused: its writes are rolled back with the run's transaction. */
class EffectRefused extends Error {
  constructor (readonly outcome: Outcome, readonly patch: Partial<sql.RunRow> = {}) { super('effect refused') }
}

function evaluate (run: sql.RunRow, content: RuleContent, steps: Step[]): { matched: boolean | null, conditionResult: boolean | null, error?: { code: string, message: string } } {
  let t0 = performance.now()
  const matches: MatchSpec[] = content.match == null ? [] : Array.isArray(content.match) ? content.match : [content.match]
  const m = evaluateMatches(matches, run.input)
  steps.push(step('match', t0, m.ok, m.detail))
  if (!m.ok) return { matched: false, conditionResult: null }
  if (content.condition == null) return { matched: true, conditionResult: null }
  t0 = performance.now()
  const c = evaluateLogic(content.condition, run.input)
  if (!c.ok) {
    steps.push(step('condition', t0, false, { error: c.error }))
    return { matched: true, conditionResult: false, error: { code: 'CONDITION_ERROR', message: `the condition could not be evaluated: ${c.error}` } }
  }
  steps.push(step('condition', t0, truthy(c.value), { value: c.value }))
  return { matched: true, conditionResult: truthy(c.value) }
}

/**
 * Executes a queued run. Returns false when there was nothing to do (already executed). Anything
 * but a domain error (AppError, a missing template value) propagates: the transaction rolls back,
 * the run stays queued and pg-boss retries the job; on the `lastTry` the run is failed instead,
 * so a run never stays queued in silence.
 */
export async function executeRun (ctx: ServiceContext, runId: string, lastTry = false): Promise<boolean> {
  try {
    return await executeOnce(ctx, runId)
  } catch (err) {
    if (!lastTry) throw err
    ctx.log.error({ err }, 'automation run failed for good')
    return failForGood(ctx, runId)
  }
}

function failForGood (ctx: ServiceContext, runId: string): Promise<boolean> {
  return recordOutcome(ctx, runId, { status: 'failed', started_at: new Date(), error: { code: 'INTERNAL_ERROR', message: 'the run could not be executed; every retry failed (see the worker log)' } })
}

/** Finishes a still-queued run with `patch` in a transaction of its own (nothing else is applied). */
async function recordOutcome (ctx: ServiceContext, runId: string, patch: Partial<sql.RunRow> & { status: sql.RunStatus }): Promise<boolean> {
  return withTransaction(ctx.db, async tx => {
    const run = await sql.claimRun(tx, ctx.tenantId, runId, false)
    if (run === null || run.status !== 'queued') return false
    const rctx = await ruleContext({ ...ctx, db: tx, causation: { depth: run.depth + 1, ruleId: run.rule_id, runId } }, ctx.db, run.rule_id, run.actor_roles ?? [])
    await finishRun(rctx, run, patch)
    return true
  })
}

// Published versions never change (PATCH edits drafts only, and a run names a version that was
// live), so a worker keeps their content: a run then reads only its own row and the rule's status.
const contents = new LRUCache<string, RuleContent>({ max: 2000 })

/** The run locked, with its rule's status and roles and its version's content (from the cache when held). */
async function claim (tx: Tx, tenantId: string, runId: string): Promise<{ run: sql.ClaimedRun, content: RuleContent | null } | null> {
  for (const withContent of [false, true]) {
    const run = await sql.claimRun(tx, tenantId, runId, withContent)
    if (run === null) return null
    const key = `${tenantId}|${run.rule_id}|${run.rule_version}`
    const held = contents.get(key)
    if (held !== undefined) return { run, content: held }
    if (withContent) {
      if (run.content != null) contents.set(key, run.content)
      return { run, content: run.content ?? null }
    }
    if (run.status !== 'queued') return { run, content: null }
  }
  return null
}

async function executeOnce (ctx: ServiceContext, runId: string): Promise<boolean> {
  try {
    return await attempt(ctx, runId)
  } catch (err) {
    if (!(err instanceof EffectRefused)) throw err
    return recordOutcome(ctx, runId, { ...err.patch, ...err.outcome })
  }
}

async function attempt (ctx: ServiceContext, runId: string): Promise<boolean> {
  return withTransaction(ctx.db, async tx => {
    const claimed = await claim(tx, ctx.tenantId, runId)
    if (claimed === null || claimed.run.status !== 'queued') return false
    const { run, content } = claimed
    const startedAt = new Date()
    const rctx = await ruleContext({ ...ctx, db: tx, causation: { depth: run.depth + 1, ruleId: run.rule_id, runId } }, ctx.db, run.rule_id, run.actor_roles ?? [])
    if (content === null || run.rule_deleted !== false || run.rule_status === 'draft' || run.rule_status === null) {
      await finishRun(rctx, run, { status: 'skipped', started_at: startedAt, error: { code: 'RULE_NOT_LIVE', message: 'the rule was deactivated or deleted before this run started' } })
      return true
    }
    const refused = await gate(rctx)
    if (refused !== null) { await finishRun(rctx, run, { status: 'failed', started_at: startedAt, error: refused }); return true }
    const steps: Step[] = []
    const e = evaluate(run, content, steps)
    const base = { started_at: startedAt, matched: e.matched, condition_result: e.conditionResult, steps }
    if (e.error) { await finishRun(rctx, run, { ...base, status: 'failed', error: e.error }); return true }
    if (e.matched === false || e.conditionResult === false) { await finishRun(rctx, run, { ...base, status: 'skipped' }); return true }
    const out = await runEffect(rctx, tx, run, content, run.rule_status === 'sandbox', steps).catch(err => {
      if (err instanceof EffectRefused) throw new EffectRefused(err.outcome, base)
      throw err
    })
    await finishRun(rctx, run, { ...base, ...out.extra, status: out.status, error: out.error ?? null })
    return true
  })
}

/** The tenant's switches (the license's automation feature): a refusal fails the run with its code. */
function gate (ctx: ServiceContext): Promise<{ code: string, message: string } | null> {
  return refusalOf(ctx.hooks.automationGate(ctx))
}
