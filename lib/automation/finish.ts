import type { ServiceContext } from '../context.js'
import { runWrite } from '../pipeline.js'
import * as sql from './sql.js'

export interface Step { phase: 'match' | 'condition' | 'effect', ok: boolean, detail: unknown, durationMs: number }

const FINAL = new Set<sql.RunStatus>(['succeeded', 'failed', 'skipped', 'dry_run'])

/**
 * Writes a run's outcome through the write pipeline, as the rule (ctx is the rule's context,
 * whose db is the run's transaction). A final outcome is audited as `automation.executed` and
 * counted; a run that fails for good also emits `automation.run.failed` (rule, run, error), which
 * rules can trigger on, so dead letters can be routed (its causation depth stops loops).
 */
export async function finishRun (ctx: ServiceContext, run: sql.RunRow, patch: Partial<sql.RunRow> & { status: sql.RunStatus }): Promise<void> {
  const final = FINAL.has(patch.status)
  await runWrite(ctx, { resource: 'automationRules', action: 'execute' }, async w => {
    await sql.updateRun(w.tx, ctx.tenantId, run.id, { ...patch, ...(final ? { finished_at: new Date() } : {}) })
    if (!final) return
    await sql.countExecution(w.tx, ctx.tenantId, run.rule_id)
    const error = patch.error ?? null
    w.record({
      audit: {
        type: 'automation.executed',
        resourceType: 'automationRule',
        resourceId: run.rule_id,
        data: { runId: run.id, ruleVersion: run.rule_version, status: patch.status, trigger: run.trigger.type, error }
      },
      ...(patch.status === 'failed'
        ? { event: { type: 'automation.run.failed', aggregateType: 'automationRun', aggregateId: run.id, payload: { rule: { id: run.rule_id, version: run.rule_version }, run: { id: run.id, trigger: run.trigger, attempts: patch.attempts ?? run.attempts }, error } } }
        : {})
    })
  })
}
