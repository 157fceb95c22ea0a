import type { Config } from '../lib/config.js'
import type { ModuleHooks } from '../lib/context.js'
import type { Logger } from '../lib/log.js'
import type { Runtime } from '../lib/runtime.js'
import * as automation from '../lib/automation/index.js'
import { pgBossSender } from '../jobs/enqueue.js'
import { OUTBOX_DISPATCH, OUTBOX_PRUNE, QUEUES, createQueues, onQueued, TILES_PRERENDER, type OutboxDispatchPayload, type TilesPrerenderPayload } from '../lib/queues/index.js'
import { handleOutboxDispatch } from '../jobs/handlers/outbox-dispatch.js'
import { handleTilesPrerender } from '../jobs/handlers/tiles-prerender.js'
import { handleOutboxPrune } from '../jobs/handlers/outbox-prune.js'
import * as outbox from '../lib/outbox/index.js'
import * as counters from '../lib/counters/index.js'
import * as layers from '../lib/layers/index.js'
import { HOURLY_POLL_SECONDS, RUN_LOOPS, startAutomation } from './automation.js'
import { warmConnections } from '../lib/db.js'
import { timed } from './metrics.js'
import * as objectTypes from '../lib/object-types/index.js'

/** How often announced commits may make this process look for pending outbox events (as often as one process announces). */
const CHECK_INTERVAL_MS = 100

/**
 * A worker's share of a runtime: queues, handlers, schedules, the outbox poll and the counter
 * fold. Run by worker/main.ts, and inside the API's process in embedded mode. Returns the stop
 * of its timers (pg-boss itself stops with the runtime).
 */
export async function startWorker (rt: Runtime, config: Readonly<Config>, log: Logger, hooks: ModuleHooks): Promise<() => void> {
  await createQueues(rt.boss)
  // pg-boss looks a queue up (and caches it) on first use. Warm that cache now, outside any
  // transaction: embedded mode has one connection, which a transaction sending a job holds.
  for (const q of QUEUES) await rt.boss.findJobs(q.name, { id: '00000000-0000-0000-0000-000000000000' })
  // The connections the run loops keep busy, opened before the first job is taken.
  await warmConnections(rt.db, RUN_LOOPS.batchSize * RUN_LOOPS.loops).catch(err => log.warn({ err }, 'could not warm the pool'))
  // And the attribute validators' meta-schema, which the first object a run writes would compile.
  objectTypes.warmValidators()

  const jobs = pgBossSender(rt.boss)
  // Who receives domain events: the automation engine (rules with object-event triggers) and the
  // layers (a changed layer's low zooms are prerendered into the shared tile cache). What they
  // queue is announced when each tenant's delivery commits (lib/queues `announceQueued`), which
  // wakes this process's loops and the other workers'.
  const consumers = [automation.eventConsumer(jobs), layers.prerenderOnObjectEvents(rt.db, jobs)]
  // When this process last queued an outbox dispatch that has not started yet (see `check`).
  let queuedAt = -Infinity
  // Dispatches are queued and woken by `check` below; the poll finds those of a process that stopped.
  const dispatchWorker = await rt.boss.work<OutboxDispatchPayload>(OUTBOX_DISPATCH.name, { pollingIntervalSeconds: config.workerPollSeconds, batchSize: 1 },
    timed(OUTBOX_DISPATCH.name, batch => { queuedAt = -Infinity; return handleOutboxDispatch({ db: rt.db, log, consumers }, batch) }))
  // Retention of delivered events, hourly; one job per tick across the fleet (the schedule's key).
  await rt.boss.work(OUTBOX_PRUNE.name, { pollingIntervalSeconds: HOURLY_POLL_SECONDS, batchSize: 1 }, timed(OUTBOX_PRUNE.name, () => handleOutboxPrune(rt.db, log, config.outboxRetentionHours)))
  await rt.boss.schedule(OUTBOX_PRUNE.name, '47 * * * *', {}, { key: 'retention', singletonKey: 'retention' })
  const engine = await startAutomation(rt, { db: rt.db, config, log, jobs, sequencer: rt.sequencer, hooks })
  const tileCache = rt.redis === null ? null : layers.createRenderCache(rt.redis)
  const tiles = await rt.boss.work<TilesPrerenderPayload>(TILES_PRERENDER.name, { pollingIntervalSeconds: config.workerPollSeconds, batchSize: 1 },
    timed(TILES_PRERENDER.name, batch => handleTilesPrerender({ db: rt.db, log, config, hooks, cache: tileCache }, batch)))
  // Announced jobs wake the loops of their queue; after a feed reconnect (null), every queue's.
  const wakes = new Map([...engine.wakes, [OUTBOX_DISPATCH.name, () => { rt.boss.notifyWorker(dispatchWorker) }], [TILES_PRERENDER.name, () => { rt.boss.notifyWorker(tiles) }]])
  const unheard = onQueued(rt.db, queue => {
    if (queue === null) for (const wake of wakes.values()) wake()
    else wakes.get(queue)?.()
  })

  // The outbox announces every write's committed events (lib/outbox `onCommitted`), and that
  // checks the pending-outbox index at once and queues a dispatch when events wait, so an event is
  // usually dispatched milliseconds after its commit; the check every WORKER_POLL_SECONDS finds
  // the events whose announcement was lost. Coalescing is local: while a dispatch this process
  // queued has not started yet (up to a second), no other is queued, since it will claim whatever
  // is pending when it starts; a running dispatch drains until nothing is pending, and what commits
  // after that is announced again.
  let checking = false
  let again = false
  const check = async (): Promise<void> => {
    if (checking) { again = true; return }
    checking = true
    try {
      do {
        again = false
        if (performance.now() - queuedAt < 1000 || !await outbox.hasPending(rt.db)) continue
        queuedAt = performance.now()
        await rt.boss.send(OUTBOX_DISPATCH.name, {}, {})
        rt.boss.notifyWorker(dispatchWorker)
      } while (again)
    } catch (err) {
      log.error({ err }, 'outbox poll failed')
    } finally {
      checking = false
    }
  }
  const poll = setInterval(() => { void check() }, config.workerPollSeconds * 1000)
  // Announcements come once per write of this process (and once per interval from the others):
  // the first one checks at once, those that follow within CHECK_INTERVAL_MS share one check.
  let lastAnnounced = -Infinity
  let soon: NodeJS.Timeout | undefined
  const unsubscribe = outbox.onCommitted(rt.db, () => {
    if (soon !== undefined) return
    const wait = lastAnnounced + CHECK_INTERVAL_MS - performance.now()
    if (wait <= 0) { lastAnnounced = performance.now(); void check(); return }
    soon = setTimeout(() => { soon = undefined; lastAnnounced = performance.now(); void check() }, wait)
  })
  // Fold counter deltas (lib/counters) so that totals stay index-only sums over a few rows, then
  // vacuum away the rows folds deleted (writes fold licensed counters too). Two workers folding at
  // once is harmless: each deletes only rows it sees, and sums never move.
  const fold = setInterval(() => {
    counters.fold(rt.db).then(() => counters.vacuum(rt.db)).catch(err => log.error({ err }, 'counter fold failed'))
  }, 5000)
  return () => {
    engine.stop()
    clearInterval(poll)
    clearTimeout(soon)
    clearInterval(fold)
    unsubscribe()
    unheard()
  }
}
