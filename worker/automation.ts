import type { Job, JobWithMetadata, PgBoss } from 'pg-boss'
import type { Logger } from '../lib/log.js'
import type { Runtime } from '../lib/runtime.js'
import type { JobSender } from '../lib/context.js'
import * as automation from '../lib/automation/index.js'
import {
  AUTOMATION_PRUNE, AUTOMATION_RUN, AUTOMATION_SCHEDULE_SYNC, AUTOMATION_TICK, WEBHOOK_DELIVER,
  type AutomationRunPayload, type AutomationScheduleSyncPayload, type AutomationTickPayload, type WebhookDeliverPayload
} from '../jobs/contracts.js'
import { handleAutomationRun } from '../jobs/handlers/automation-run.js'
import { handleWebhookDeliver } from '../jobs/handlers/webhook-deliver.js'
import { handleAutomationTick } from '../jobs/handlers/automation-tick.js'
import { handleScheduleSync } from '../jobs/handlers/automation-schedule-sync.js'
import { handleAutomationPrune } from '../jobs/handlers/automation-prune.js'
import { outboxConsumers } from '../jobs/handlers/outbox-dispatch.js'
import type { Config } from '../lib/config.js'

// The automation engine's share of a worker: its outbox consumer and one registration per queue.
// Every worker runs all of them; pg-boss hands each job to one worker (SKIP LOCKED).

/**
 * Two fetch loops of up to 8 runs each, the runs of a batch executed side by side (16 run
 * transactions in flight per worker, within the pool's 20 connections); while fetches come back
 * full they fetch again at once (pg-boss otherwise waits a polling interval after every fetch).
 */
export const RUN_WORK_OPTIONS = { pollingIntervalSeconds: 0.5, batchSize: 8, localConcurrency: 2, burstWhenBatchFull: true } as const

/** pg-boss's scheduler as lib/automation sees it: one schedule per rule, keyed by the rule id. */
function scheduler (boss: PgBoss): automation.Scheduler {
  return {
    schedule: (queue, key, cron, tz, data) => boss.schedule(queue, cron, data, { key, tz, missed: 'once', singletonKey: key }),
    unschedule: (queue, key) => boss.unschedule(queue, key)
  }
}

/** Registers the automation queues; returns a function that wakes this process's run worker. */
export async function startAutomation (rt: Runtime, config: Readonly<Config>, log: Logger, jobs: JobSender): Promise<() => void> {
  const deps: automation.EngineDeps = { db: rt.db, config, log, jobs, sequencer: rt.sequencer }
  outboxConsumers.push(automation.eventConsumer(jobs))
  // Embedded mode (no DATABASE_URL): every fetch loop polls on the one connection the API's
  // requests use, so one run loop (woken at once by dispatches) and two delivery loops polling
  // once a second, instead of 2 + 8 loops polling twice a second.
  const embedded = config.databaseUrl === null
  const runLoops = await workInLoops<AutomationRunPayload>(rt.boss, AUTOMATION_RUN.name, embedded ? 1 : RUN_WORK_OPTIONS.localConcurrency, batch => handleAutomationRun(deps, batch))
  await rt.boss.work<WebhookDeliverPayload>(WEBHOOK_DELIVER.name, embedded ? { pollingIntervalSeconds: 1, batchSize: 1, localConcurrency: 2 } : { pollingIntervalSeconds: 0.5, batchSize: 1, localConcurrency: 8 },
    batch => handleWebhookDeliver(deps, batch))
  await rt.boss.work<AutomationTickPayload>(AUTOMATION_TICK.name, { pollingIntervalSeconds: 1, batchSize: 1, includeMetadata: true },
    batch => handleAutomationTick(deps, batch as Array<JobWithMetadata<AutomationTickPayload>>))
  await rt.boss.work<AutomationScheduleSyncPayload>(AUTOMATION_SCHEDULE_SYNC.name, { pollingIntervalSeconds: 1, batchSize: 1 },
    batch => handleScheduleSync(deps, scheduler(rt.boss), batch))
  await rt.boss.work(AUTOMATION_PRUNE.name, { pollingIntervalSeconds: 5, batchSize: 1 }, () => handleAutomationPrune(deps))
  await rt.boss.schedule(AUTOMATION_PRUNE.name, '17 * * * *', {}, { key: 'retention', singletonKey: 'retention' })
  return () => { for (const id of runLoops) rt.boss.notifyWorker(id) }
}

/**
 * `loops` fetch loops on `queue` with RUN_WORK_OPTIONS, each a registration of its own so that a
 * loop can wake itself: after a batch it fetches again at once, and waits its polling interval
 * only after a fetch that found nothing. (pg-boss fetches again at once only after a full batch;
 * after a partial one, jobs queued meanwhile waited up to half a second: an idle worker at the
 * tail of the end-to-end bench.) Returns the loops' ids. The bench's pg-boss baseline works its
 * queue the same way.
 */
export async function workInLoops<T extends object> (boss: PgBoss, queue: string, loops: number, handler: (batch: Array<Job<T>>) => Promise<void>): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < loops; i++) {
    let id = ''
    id = await boss.work<T>(queue, { ...RUN_WORK_OPTIONS, localConcurrency: 1 }, async batch => {
      try {
        await handler(batch)
      } finally {
        boss.notifyWorker(id)
      }
    })
    ids.push(id)
  }
  return ids
}
