import type { JobWithMetadata, PgBoss } from 'pg-boss'
import type { Runtime } from '../lib/runtime.js'
import * as automation from '../lib/automation/index.js'
import {
  AUTOMATION_PRUNE, AUTOMATION_RUN, AUTOMATION_SCHEDULE_SYNC, AUTOMATION_TICK, WEBHOOK_DELIVER,
  type AutomationRunPayload, type AutomationScheduleSyncPayload, type AutomationTickPayload, type WebhookDeliverPayload
} from '../lib/queues/index.js'
import { handleAutomationRun } from '../jobs/handlers/automation-run.js'
import { handleWebhookDeliver } from '../jobs/handlers/webhook-deliver.js'
import { handleAutomationTick } from '../jobs/handlers/automation-tick.js'
import { handleScheduleSync } from '../jobs/handlers/automation-schedule-sync.js'
import { handleAutomationPrune } from '../jobs/handlers/automation-prune.js'
import { workInLoops, type LoopOptions } from './loops.js'
import { timed } from './metrics.js'

// The automation engine's share of a worker: one registration per queue. Every worker runs all
// of them; pg-boss hands each job to one worker (SKIP LOCKED).

/**
 * automation.run: two fetch loops of up to 8 runs each, the runs of a batch executed side by side
 * (16 run transactions in flight per worker, within the pool's 20 connections). Each loop fetches
 * again as soon as its batch is done (worker/loops.ts). Queued runs are announced (lib/queues
 * `announceQueued`), which wakes the loops; an idle worker's look every WORKER_POLL_SECONDS (the
 * default here) is the backstop.
 */
export const RUN_LOOPS: LoopOptions = { loops: 2, batchSize: 8, pollSeconds: 2, restSeconds: 60 }

/**
 * webhook.deliver: eight attempts in flight per worker, one per loop, so a slow receiver holds one
 * loop only. A first attempt is announced when its run commits; a retry, due 1 s, 2 s, 4 s...
 * after its attempt, wakes the loops of the process that queued it then (below).
 */
export const DELIVERY_LOOPS: LoopOptions = { loops: 8, batchSize: 1, pollSeconds: 2, restSeconds: 60 }

/** How often the queues of hourly jobs (retention) are looked at: their cron announces nothing, and a minute late does no harm. */
export const HOURLY_POLL_SECONDS = 60

/** pg-boss's scheduler as lib/automation sees it: one schedule per rule, keyed by the rule id. */
function scheduler (boss: PgBoss): automation.Scheduler {
  return {
    schedule: (queue, key, cron, tz, data) => boss.schedule(queue, cron, data, { key, tz, missed: 'once', singletonKey: key }),
    unschedule: (queue, key) => boss.unschedule(queue, key)
  }
}

/**
 * Registers the automation queues; returns the wake of each queue's loops (by queue name), and
 * the stop of the loops' poll timers.
 */
export async function startAutomation (rt: Runtime, deps: automation.EngineDeps): Promise<{ wakes: Map<string, () => void>, stop: () => void }> {
  const { config } = deps
  // Embedded mode (no DATABASE_URL): every fetch runs on the one connection the API's requests
  // use, so one run loop and two delivery loops.
  const embedded = config.databaseUrl === null
  const pollSeconds = config.workerPollSeconds
  const runs = await workInLoops<AutomationRunPayload>(rt.boss, AUTOMATION_RUN.name, { ...RUN_LOOPS, pollSeconds, ...(embedded ? { loops: 1 } : {}) }, timed(AUTOMATION_RUN.name, batch => handleAutomationRun(deps, batch)))
  const deliveries = await workInLoops<WebhookDeliverPayload>(rt.boss, WEBHOOK_DELIVER.name, { ...DELIVERY_LOOPS, pollSeconds, ...(embedded ? { loops: 2 } : {}) },
    timed(WEBHOOK_DELIVER.name, async batch => {
      // A retry is due 1 s, 2 s, 4 s... after its attempt: look for it then, not at the next poll.
      const next = await handleWebhookDeliver(deps, batch)
      if (next !== null) setTimeout(() => { deliveries.wake() }, next * 1000 + 20).unref()
    }))
  // Ticks are sent by pg-boss's cron, which announces nothing: looked for every second.
  const tick = await rt.boss.work<AutomationTickPayload>(AUTOMATION_TICK.name, { pollingIntervalSeconds: 1, batchSize: 1, includeMetadata: true },
    timed(AUTOMATION_TICK.name, batch => handleAutomationTick(deps, batch as Array<JobWithMetadata<AutomationTickPayload>>)))
  const sync = await rt.boss.work<AutomationScheduleSyncPayload>(AUTOMATION_SCHEDULE_SYNC.name, { pollingIntervalSeconds: pollSeconds, batchSize: 1 },
    timed(AUTOMATION_SCHEDULE_SYNC.name, batch => handleScheduleSync(deps, scheduler(rt.boss), batch)))
  await rt.boss.work(AUTOMATION_PRUNE.name, { pollingIntervalSeconds: HOURLY_POLL_SECONDS, batchSize: 1 }, timed(AUTOMATION_PRUNE.name, () => handleAutomationPrune(deps)))
  await rt.boss.schedule(AUTOMATION_PRUNE.name, '17 * * * *', {}, { key: 'retention', singletonKey: 'retention' })
  const wakes = new Map([[AUTOMATION_RUN.name, runs.wake], [WEBHOOK_DELIVER.name, deliveries.wake],
    [AUTOMATION_TICK.name, () => { rt.boss.notifyWorker(tick) }], [AUTOMATION_SCHEDULE_SYNC.name, () => { rt.boss.notifyWorker(sync) }]])
  return { wakes, stop: () => { runs.stop(); deliveries.stop() } }
}
