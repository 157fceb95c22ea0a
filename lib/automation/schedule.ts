import type { ServiceContext } from '../context.js'
import { withTransaction } from '../db.js'
import { AUTOMATION_TICK } from '../../jobs/contracts.js'
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
 * Brings the rule's pg-boss schedule in line with the rule as committed. Holds the rule's row lock
 * meanwhile, so two syncs of one rule (publish then deactivate in quick succession) apply in order.
 */
export async function syncSchedule (ctx: ServiceContext, ruleId: string, scheduler: Scheduler): Promise<'scheduled' | 'unscheduled'> {
  return withTransaction(ctx.db, async tx => {
    const rule = await sql.findRule(tx, ctx.tenantId, ruleId, true)
    const trigger = rule?.status !== 'draft' ? rule?.live_content?.trigger : undefined
    if (trigger?.type === 'schedule') {
      await scheduler.schedule(AUTOMATION_TICK.name, ruleId, trigger.cron, trigger.timezone ?? 'UTC', { tenantId: ctx.tenantId, ruleId })
      return 'scheduled'
    }
    await scheduler.unschedule(AUTOMATION_TICK.name, ruleId)
    return 'unscheduled'
  })
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
