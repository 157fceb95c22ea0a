import { loadConfigOrExit } from '../lib/config.js'
import '../lib/modules.js'
import { createLogger } from '../lib/log.js'
import { packageVersion } from '../lib/release/version.js'
import { onShutdown, startRuntimeOrExit } from '../lib/runtime.js'
import { createQueues, pgBossSender } from '../jobs/enqueue.js'
import { OUTBOX_DISPATCH, TILES_PRERENDER, type OutboxDispatchPayload, type TilesPrerenderPayload } from '../jobs/contracts.js'
import { handleOutboxDispatch, outboxConsumers } from '../jobs/handlers/outbox-dispatch.js'
import { handleTilesPrerender } from '../jobs/handlers/tiles-prerender.js'
import * as outbox from '../lib/outbox/index.js'
import * as counters from '../lib/counters/index.js'
import * as layers from '../lib/layers/index.js'
import { startAutomation } from './automation.js'
import { serveWorkerMetrics } from './metrics.js'

// config -> runtime -> queues -> handlers -> schedules; stop on SIGTERM. Scales horizontally:
// every worker competes for the same pg-boss queues and outbox rows (SKIP LOCKED).
const config = loadConfigOrExit(process.env, packageVersion())
const log = createLogger('worker', config.logLevel)
const rt = await startRuntimeOrExit(config, log, { worker: true })
await createQueues(rt.boss)

// A dispatch that queued automation runs wakes this process's run worker at once (event-to-run
// latency), instead of leaving them to its next poll.
let wakeRuns = () => {}
const dispatchWorker = await rt.boss.work<OutboxDispatchPayload>(OUTBOX_DISPATCH.name, { pollingIntervalSeconds: 1, batchSize: 1 },
  jobs => handleOutboxDispatch(rt.db, log, jobs).then(() => wakeRuns()))
const jobs = pgBossSender(rt.boss)
wakeRuns = await startAutomation(rt, config, log, jobs)
// Layers: object events queue a low-zoom prerender per affected layer, into Redis when set.
const tileCache = rt.redis === null ? null : layers.createRenderCache(rt.redis)
outboxConsumers.push(layers.prerenderOnObjectEvents(rt.db, jobs))
await rt.boss.work<TilesPrerenderPayload>(TILES_PRERENDER.name, { pollingIntervalSeconds: 2, batchSize: 1 }, jobs => handleTilesPrerender({ db: rt.db, log, config, cache: tileCache }, jobs))

// Poll the pending-outbox index once a second and wake a dispatch (coalesced by singletonKey
// across all workers), so events are delivered within about a second of their commit.
const poll = setInterval(() => {
  outbox.hasPending(rt.db)
    .then(async pending => {
      if (!pending) return
      await rt.boss.send(OUTBOX_DISPATCH.name, {}, { singletonKey: 'outbox', singletonSeconds: 1 })
      rt.boss.notifyWorker(dispatchWorker)
    })
    .catch(err => log.error({ err }, 'outbox poll failed'))
}, 1000)
// Fold counter deltas (lib/counters) so that totals stay index-only sums over a few rows. Two
// workers folding at once is harmless: each deletes only rows it sees, and sums never move.
const fold = setInterval(() => {
  counters.fold(rt.db).catch(err => log.error({ err }, 'counter fold failed'))
}, 5000)
const metrics = config.workerMetricsPort === null ? null : await serveWorkerMetrics(config.workerMetricsPort, config.metricsToken, log)
onShutdown(log, async () => {
  await metrics?.close()
  clearInterval(poll)
  clearInterval(fold)
  await rt.stop()
})
// Announced only once SIGTERM is handled: a signal right after this line still stops gracefully.
log.info({ release: config.release }, 'worker started')
