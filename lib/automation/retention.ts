import type { ServiceContext } from '../context.js'
import type { Db } from '../db.js'
import type { Config } from '../config.js'
import * as access from '../access/index.js'
import * as outbox from '../outbox/index.js'
import * as sql from './sql.js'
import { eventConsumer } from './events.js'

const DAY_MS = 86_400_000
const BATCH = 5000

/**
 * Retention (the automation.prune job): succeeded, skipped and dry-run runs go after
 * AUTOMATION_RUN_RETENTION_DAYS, failed ones after AUTOMATION_FAILED_RUN_RETENTION_DAYS. Tenant by
 * tenant, in bounded batches (index automation_runs_tenant_finished).
 */
export async function pruneRuns (db: Db, config: Readonly<Config>, now = new Date()): Promise<number> {
  let pruned = 0
  const plans: Array<[sql.RunStatus[], number]> = [
    [['succeeded', 'skipped', 'dry_run'], config.automation.runRetentionDays],
    [['failed'], config.automation.failedRunRetentionDays]
  ]
  for (const tenantId of await sql.tenantsWithRuns(db)) {
    for (const [statuses, days] of plans) {
      const before = new Date(now.getTime() - days * DAY_MS)
      for (let n = BATCH; n === BATCH;) { n = await sql.pruneRuns(db, tenantId, statuses, before, BATCH); pruned += n }
    }
  }
  return pruned
}

/**
 * POST /v1/outbox/flush: delivers the caller's tenant's pending events now, those waiting out a
 * retry delay too (runs are queued as usual). Events a worker's dispatch holds at that moment are
 * waited for, not skipped: when the flush answers, they have been delivered (by the worker, so
 * not counted in `delivered`) and their runs are queued.
 */
export async function flushOutbox (ctx: ServiceContext): Promise<outbox.DeliveryResult> {
  await access.authorize(ctx, 'automationRules', 'execute')
  const consumer = eventConsumer(ctx.jobs)
  const total = { delivered: 0, failed: 0, pending: 0 }
  for (;;) {
    const r = await outbox.claimAndDeliver(ctx.db, [consumer], 500, ctx.tenantId, { waiting: true, waitForHeld: true, log: ctx.log })
    total.delivered += r.delivered
    total.failed += r.failed
    total.pending = r.pending
    if (r.delivered === 0 || r.pending === 0) return total
  }
}
