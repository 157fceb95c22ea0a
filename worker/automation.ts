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
 * again as soon as its batch is done; an idle worker looks every half second (worker/loops.ts).
 */
export const RUN_LOOPS: LoopOptions = { loops: 2, batchSize: 8, pollSeconds: 0.5, restSeconds: 10 }

/**
 * webhook.deliver: eight attempts in flight per worker, one per loop, so a slow receiver holds one
 * loop only. Retries are due 1 s, 2 s, 4 s... after an attempt: the half-second poll finds them.
 */
export const DELIVERY_LOOPS: LoopOptions = { loops: 8, batchSize: 1, pollSeconds: 0.5, restSeconds: 10 }

/** pg-boss's scheduler as lib/automation sees it: one schedule per rule, keyed by the rule id. */
function scheduler (boss: PgBoss): automation.Scheduler {
  return {
    schedule: (queue, key, cron, tz, data) => boss.schedule(queue, cron, data, { key, tz, missed: 'once', singletonKey: key }),
    unschedule: (queue, key) => boss.unschedule(queue, key)
  }
}

/**
 * Registers the automation queues; returns a function that wakes this process's run loops, and
 * the stop of the loops' poll timers.
 */
export async function startAutomation (rt: Runtime, deps: automation.EngineDeps): Promise<{ wakeRuns: () => void, stop: () => void }> {
  const { config } = deps
  // Embedded mode (no DATABASE_URL): every fetch runs on the one connection the API's requests
  // use, so one run loop (woken at once by dispatches) and two delivery loops looking once a second.
  const embedded = config.databaseUrl === null
  const runs = await workInLoops<AutomationRunPayload>(rt.boss, AUTOMATION_RUN.name, embedded ? { ...RUN_LOOPS, loops: 1 } : RUN_LOOPS, timed(AUTOMATION_RUN.name, batch => handleAutomationRun(deps, batch)))
  const deliveries = await workInLoops<WebhookDeliverPayload>(rt.boss, WEBHOOK_DELIVER.name, embedded ? { ...DELIVERY_LOOPS, loops: 2, pollSeconds: 1 } : DELIVERY_LOOPS,
    timed(WEBHOOK_DELIVER.name, async batch => {
      // A retry is due 1 s, 2 s, 4 s... after its attempt: look for it then, not at the next poll.
      const next = await handleWebhookDeliver(deps, batch)
      if (next !== null) setTimeout(() => { deliveries.wake() }, next * 1000 + 20).unref()
    }))
  await rt.boss.work<AutomationTickPayload>(AUTOMATION_TICK.name, { pollingIntervalSeconds: 1, batchSize: 1, includeMetadata: true },
    timed(AUTOMATION_TICK.name, batch => handleAutomationTick(deps, batch as Array<JobWithMetadata<AutomationTickPayload>>)))
  await rt.boss.work<AutomationScheduleSyncPayload>(AUTOMATION_SCHEDULE_SYNC.name, { pollingIntervalSeconds: 1, batchSize: 1 },
    timed(AUTOMATION_SCHEDULE_SYNC.name, batch => handleScheduleSync(deps, scheduler(rt.boss), batch)))
  await rt.boss.work(AUTOMATION_PRUNE.name, { pollingIntervalSeconds: 5, batchSize: 1 }, timed(AUTOMATION_PRUNE.name, () => handleAutomationPrune(deps)))
  await rt.boss.schedule(AUTOMATION_PRUNE.name, '17 * * * *', {}, { key: 'retention', singletonKey: 'retention' })
  return { wakeRuns: runs.wake, stop: () => { runs.stop(); deliveries.stop() } }
}
