import type { ServiceContext } from '../context.js'
import type { Tx } from '../db.js'
import { isAppError } from '../errors.js'
import { runWrite, type Change } from '../pipeline.js'
import * as sql from './sql.js'

export interface Step { phase: 'match' | 'condition' | 'effect', ok: boolean, detail: unknown, durationMs: number }

const FINAL = new Set<sql.RunStatus>(['succeeded', 'failed', 'skipped', 'dry_run'])

type Outcome = Partial<sql.RunRow> & { status: sql.RunStatus }

function changeOf (run: sql.RunRow, patch: Outcome): Change {
  const error = patch.error ?? null
  return {
    audit: {
      type: 'automation.executed',
      resourceType: 'automationRule',
      resourceId: run.rule_id,
      data: { runId: run.id, ruleVersion: run.rule_version, status: patch.status, trigger: run.trigger.type, error }
    },
    ...(patch.status === 'failed'
      ? { event: { type: 'automation.run.failed', aggregateType: 'automationRun', aggregateId: run.id, payload: { rule: { id: run.rule_id, version: run.rule_version }, run: { id: run.id, trigger: run.trigger, attempts: patch.attempts ?? run.attempts }, error } } }
      : {})
  }
}

async function store (tx: Tx, tenantId: string, run: sql.RunRow, patch: Outcome, final: boolean): Promise<void> {
  if (final) await sql.finishRunRow(tx, tenantId, run.id, patch)
  else await sql.updateRun(tx, tenantId, run.id, patch)
}

/**
 * Writes a run's outcome through the write pipeline, as the rule (ctx is the rule's context,
 * whose db is the run's transaction). A final outcome is audited as `automation.executed` and
 * counted; a run that fails for good also emits `automation.run.failed` (rule, run, error), which
 * rules can trigger on, so dead letters can be routed (its causation depth stops loops).
 * When the pipeline refuses (an expired license, automation switched off: its hooks throw an
 * AppError), the outcome is still stored, without audit or event: a run never stays queued
 * because of the very refusal it records.
 */
export async function finishRun (ctx: ServiceContext, run: sql.RunRow, patch: Outcome): Promise<void> {
  const final = FINAL.has(patch.status)
  try {
    await runWrite(ctx, { resource: 'automationRules', action: 'execute' }, async w => {
      // Final: the row, its count and its audit/event in one statement (one round trip).
      if (final) await w.fold(sql.finishRunFolded(ctx.tenantId, run.id, patch, changeOf(run, patch)))
      else await sql.updateRun(w.tx, ctx.tenantId, run.id, patch)
    })
  } catch (err) {
    // A refusal after the store (an in-transaction hook) leaves the same outcome written; storing
    // it again changes nothing and counts nothing twice (finishRunRow writes unfinished runs only).
    if (!isAppError(err)) throw err
    await store(ctx.db as Tx, ctx.tenantId, run, patch, final)
  }
}
