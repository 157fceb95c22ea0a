import '../lib/heap.js'
import { loadConfigOrExit, requireDatabaseUrl } from '../lib/config.js'
import { wireModules } from '../lib/modules.js'
import { createLogger } from '../lib/log.js'
import { packageVersion } from '../lib/release/index.js'
import { onShutdown, startRuntimeOrExit } from '../lib/runtime.js'
import { startWorker } from './start.js'
import { serveWorkerMetrics } from './metrics.js'
import * as health from '../lib/health/index.js'

// config -> runtime -> queues -> handlers -> schedules; stop on SIGTERM. Scales horizontally:
// every worker competes for the same pg-boss queues and outbox rows (SKIP LOCKED).
const config = loadConfigOrExit(process.env, packageVersion())
requireDatabaseUrl(config, 'worker')
const log = createLogger('worker', config.logLevel)
const rt = await startRuntimeOrExit(config, log, { worker: true })
const stopWorker = await startWorker(rt, config, log, wireModules())
health.watchProcess(rt.db, config)
const metrics = config.workerMetricsPort === null ? null : await serveWorkerMetrics(config.workerMetricsPort, config.metricsToken, log)
onShutdown(log, async () => {
  await metrics?.close()
  stopWorker()
  await rt.stop()
})
// Announced only once SIGTERM is handled: a signal right after this line still stops gracefully.
log.info({ release: config.release }, 'worker started')
