import { randomUUID } from 'node:crypto'
import type { JobSender } from '../context.js'
import { withTransaction, type Db, type Tx } from '../db.js'
import { AUTOMATION_RUN } from '../queues/contracts.js'
import * as sql from './sql.js'

// How every trigger becomes a run: a `queued` run row keyed by (tenant, rule, trigger key) and an
// automation.run job, both in the caller's transaction. A trigger seen twice (a redelivered
// outbox event, a retried tick) finds its run and enqueues nothing new.

/** Beyond this many automation-caused hops an event starts no run (a rule that triggers itself). */
export const MAX_CAUSATION_DEPTH = 5

export interface TriggerSpec {
  ruleId: string
  ruleVersion: number
  trigger: Record<string, unknown>
  key: string
  depth: number
  input: unknown
  replayOf?: string
}

export async function queueRun (tx: Tx, tenantId: string, jobs: JobSender | null, t: TriggerSpec): Promise<string> {
  const run = await sql.insertRun(tx, tenantId, {
    rule_id: t.ruleId, rule_version: t.ruleVersion, trigger: t.trigger, trigger_key: t.key, depth: t.depth, input: t.input, replay_of: t.replayOf ?? null
  })
  if (run.created) {
    if (jobs === null) throw new Error('automation runs need a job sender (the app was built without pg-boss)')
    await jobs.send(AUTOMATION_RUN.name, { tenantId, runId: run.id }, { db: tx })
  }
  return run.id
}

/**
 * queueRun on the pool for the webhook ingress: the run row and its job in ONE statement
 * (autocommit: both or neither) when the sender can fold its insert into it, one round trip
 * instead of four (BEGIN, run, job, COMMIT); else queueRun in a transaction. A trigger key seen
 * before (a retried Idempotency-Key) inserts neither and answers the first call's run.
 */
export async function queueRunAtOnce (db: Db, tenantId: string, jobs: JobSender | null, t: TriggerSpec): Promise<string> {
  if (jobs?.sendGuarded === undefined) return withTransaction(db, tx => queueRun(tx, tenantId, jobs, t))
  const id = randomUUID()
  const guard = sql.insertRunStatement(tenantId, id, {
    rule_id: t.ruleId, rule_version: t.ruleVersion, trigger: t.trigger, trigger_key: t.key, depth: t.depth, input: t.input, replay_of: t.replayOf ?? null
  })
  const inserted = await jobs.sendGuarded(db, AUTOMATION_RUN.name, { tenantId, runId: id }, guard)
  if (inserted.length > 0) return id
  const existing = await sql.runIdByKey(db, tenantId, t.ruleId, t.key)
  if (existing === null) throw new Error(`the run of trigger key ${t.key} was neither inserted nor found`)
  return existing
}

/** Records a run that stops before matching (the causation depth was reached), with the reason. */
export async function recordStoppedRun (tx: Tx, tenantId: string, t: TriggerSpec, reason: string): Promise<void> {
  const run = await sql.insertRun(tx, tenantId, {
    rule_id: t.ruleId, rule_version: t.ruleVersion, trigger: t.trigger, trigger_key: t.key, depth: t.depth, input: t.input
  })
  if (!run.created) return
  await sql.updateRun(tx, tenantId, run.id, {
    status: 'skipped', error: { code: 'CAUSATION_DEPTH', message: reason }, started_at: new Date(), finished_at: new Date()
  })
}
