import type { ServiceContext } from '../context.js'
import { withTransaction } from '../db.js'
import { AUTOMATION_TICK } from '../queues/contracts.js'
import * as sql from './sql.js'
import { queueRun } from './trigger.js'

// Schedule triggers ride on pg-boss's scheduler: one schedule per rule on the automation.tick
// queue, keyed by the rule id (so rules never overwrite each other), `missed: 'once'` (after
// downtime a missed tick runs once, not once per missed tick). pg-boss sends one job per
// occurrence across the fleet; the tick's job id is the run's trigger key, so a retried tick job
// finds its run instead of starting another.

/** What lib needs of pg-boss's scheduling (the worker adapts its PgBoss instance). */
export interface Scheduler {
  schedule (queue: string, key: string, cron: string, tz: string, data: object): Promise<void>
  unschedule (queue: string, key: string): Promise<void>
}

/**
 * Brings the rule's pg-boss schedule in line with the rule as committed. pg-boss writes schedules
 * on its own connection, so no lock of ours can span the write (embedded mode has one connection,
 * which the lock's transaction would hold). Instead the sync reads the rule again after applying
 * and applies again until what it applied is what the rule says: of two racing syncs (publish then
 * deactivate in quick succession), the last to apply has read the final state.
 */
export async function syncSchedule (ctx: ServiceContext, ruleId: string, scheduler: Scheduler): Promise<'scheduled' | 'unscheduled'> {
  let applied: string | null = null
  for (let round = 0; round < 5; round++) {
    const rule = await sql.findRule(ctx.db, ctx.tenantId, ruleId)
    const trigger = rule?.status !== 'draft' ? rule?.live_content?.trigger : undefined
    const wanted = trigger?.type === 'schedule' ? JSON.stringify([trigger.cron, trigger.timezone ?? 'UTC']) : 'none'
    if (wanted === applied) break
    if (trigger?.type === 'schedule') {
      await scheduler.schedule(AUTOMATION_TICK.name, ruleId, trigger.cron, trigger.timezone ?? 'UTC', { tenantId: ctx.tenantId, ruleId })
    } else {
      await scheduler.unschedule(AUTOMATION_TICK.name, ruleId)
    }
    applied = wanted
  }
  return applied === 'none' ? 'unscheduled' : 'scheduled'
}

/** One tick: a queued run of the rule's live version with payload {scheduledAt}. */
export async function tick (ctx: ServiceContext, ruleId: string, tickId: string, scheduledAt: Date): Promise<string | null> {
  return withTransaction(ctx.db, async tx => {
    const rule = await sql.findRule(tx, ctx.tenantId, ruleId)
    if (rule === null || rule.status === 'draft' || rule.live_version === null || rule.live_content?.trigger.type !== 'schedule') return null
    return queueRun(tx, ctx.tenantId, ctx.jobs, {
      ruleId, ruleVersion: rule.live_version, key: `tick:${tickId}`, depth: 0,
      input: { scheduledAt: scheduledAt.toISOString() },
      trigger: { type: 'schedule', tickId, scheduledAt: scheduledAt.toISOString() }
    })
  })
}
