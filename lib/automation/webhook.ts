import type { ServiceContext } from '../context.js'
import { withTransaction, type Tx } from '../db.js'
import { assertMayWrite, type WriteSpec } from '../pipeline.js'
import { WEBHOOK_DELIVER } from '../queues/contracts.js'
import * as sql from './sql.js'
import { maxAttempts, type WebhookEffect } from './definition.js'
import { callOnce, type CallResult } from './http.js'
import { signBody } from './secrets.js'
import { ruleContext } from './context.js'
import { finishRun } from './finish.js'
import { refusalOf } from './refusal.js'
import { webhookAttemptsTotal } from '../metrics.js'

// One attempt of a webhook effect (a webhook.deliver job). The call happens outside any
// transaction; its outcome is then recorded on the run under the run's lock, with the next
// attempt (startAfter 1 s, 2 s, 4 s...) enqueued in the same transaction. Every attempt sends the
// same bytes and the same Idempotency-Key (the run id): the receiver deduplicates.

export function backoffSeconds (attempt: number): number {
  return 2 ** (attempt - 1)
}

/** 2xx succeeds; 408, 429, 5xx, timeouts and connection errors are retried; the rest are final. */
function classify (r: CallResult): 'ok' | 'retry' | 'final' {
  if (r.kind === 'refused') return 'final'
  if (r.kind === 'error') return 'retry'
  if (r.status >= 200 && r.status < 300) return 'ok'
  if (r.status === 408 || r.status === 429 || r.status >= 500) return 'retry'
  return 'final'
}

/** The outcome class an attempt is counted under (webhook_attempts_total, docs/operations.md "Metrics and alerts"). */
export function outcomeOf (r: CallResult): string {
  if (r.kind === 'response') return r.status >= 200 && r.status < 600 ? `${Math.floor(r.status / 100)}xx` : 'other'
  return r.kind === 'refused' ? 'blocked' : r.timedOut ? 'timeout' : 'connection_error'
}

function describe (r: CallResult): string {
  if (r.kind === 'response') return r.status >= 300 && r.status < 400 ? `answered ${r.status}; redirects are not followed (Location: ${r.headers.location ?? '-'})` : `answered ${r.status}`
  return r.kind === 'refused' ? `refused: ${r.reason}` : r.timedOut ? `timed out: ${r.reason}` : `connection failed: ${r.reason}`
}

/**
 * An attempt writes nothing until it is recorded, yet it is the effect reaching the outside: it is
 * refused as a write of the run would be (docs/behaviour.md "Licensing": while expired, automation effects
 * give LICENSE_EXPIRED), before it is sent, every attempt, so a retry after the license expired
 * mid-run sends nothing either, and the run fails with the refusal as its error.
 */
const ATTEMPT: WriteSpec = { resource: 'automationRules', action: 'execute' }

/** One attempt; resolves to the seconds until the next attempt when one was queued, else null. */
export async function deliverAttempt (ctx: ServiceContext, runId: string, attempt: number): Promise<number | null> {
  const run = await sql.runForAttempt(ctx.db, ctx.tenantId, runId)
  if (run === null || run.status !== 'running' || run.attempts >= attempt || run.outgoing === null) return null
  const rctx = await ruleContext(ctx, ctx.db, run.rule_id, run.actor_roles ?? [])
  const refused = await refusalOf(assertMayWrite(rctx, ATTEMPT))
  if (refused !== null) {
    await underLock(rctx, runId, attempt, (lctx, locked) => finishRun(lctx, locked, { status: 'failed', error: refused }))
    return null
  }
  const effect = run.content?.effect as WebhookEffect | undefined
  const body = run.outgoing.body === null ? null : Buffer.from(run.outgoing.body)
  const headers: Record<string, string> = {
    ...run.outgoing.headers,
    ...(body ? { 'content-type': 'application/json' } : {}),
    'idempotency-key': run.id,
    'x-webhook-attempt': String(attempt),
    'x-webhook-signature': signBody(run.signing_secret ?? '', body ?? Buffer.alloc(0)),
    'user-agent': 'spatial-automation/1'
  }
  const startedAt = new Date()
  const result = await callOnce({ url: run.outgoing.url, method: run.outgoing.method, headers, body }, {
    allowPrivate: ctx.config.webhookAllowPrivateNetworks, timeoutMs: ctx.config.automation.webhookTimeoutMs
  })
  const verdict = classify(result)
  webhookAttemptsTotal.inc({ outcome: outcomeOf(result) })
  const max = effect ? maxAttempts(effect) : 1
  const entry = {
    attempt, at: startedAt.toISOString(), durationMs: Date.now() - startedAt.getTime(), outcome: verdict === 'ok' ? 'succeeded' : 'failed',
    status: result.kind === 'response' ? result.status : null, address: result.address ?? null, detail: describe(result),
    ...(verdict === 'retry' && attempt < max ? { nextAttemptInSeconds: backoffSeconds(attempt) } : {})
  }
  const response = result.kind === 'response' ? { status: result.status, headers: result.headers, body: result.body, truncated: result.truncated } : null
  let next: number | null = null
  await underLock(rctx, runId, attempt, async (lctx, locked, tx) => {
    const patch = { attempts: attempt, attempt_log: [...locked.attempt_log, entry], response }
    if (verdict === 'ok') return finishRun(lctx, locked, { ...patch, status: 'succeeded' })
    if (verdict === 'retry' && attempt < max) {
      await ctx.jobs!.send(WEBHOOK_DELIVER.name, { tenantId: ctx.tenantId, runId, attempt: attempt + 1 }, { db: tx, startAfterSeconds: backoffSeconds(attempt), singletonKey: `${runId}:${attempt + 1}` })
      next = backoffSeconds(attempt)
      return sql.updateRun(tx, ctx.tenantId, runId, patch)
    }
    const why = verdict === 'retry' ? `gave up after ${attempt} attempt(s): ${entry.detail}` : entry.detail
    return finishRun(lctx, locked, { ...patch, status: 'failed', error: { code: 'WEBHOOK_FAILED', message: why } })
  })
  return next
}

/** Records an attempt's outcome under the run's lock, unless another delivery of it got there first. */
async function underLock (rctx: ServiceContext, runId: string, attempt: number, record: (lctx: ServiceContext, locked: sql.RunRow, tx: Tx) => Promise<void>): Promise<void> {
  await withTransaction(rctx.db, async tx => {
    const locked = await sql.lockRun(tx, rctx.tenantId, runId)
    if (locked === null || locked.status !== 'running' || locked.attempts >= attempt) return
    await record({ ...rctx, db: tx, causation: { depth: locked.depth + 1, ruleId: locked.rule_id, runId } }, locked, tx)
  })
}
