import '../lib/heap.js'
import http from 'node:http'
import { loadConfigOrExit, requireDatabaseUrl } from '../lib/config.js'
import { createLogger } from '../lib/log.js'
import { closeEvaluation, warmEvaluation } from '../lib/object-types/index.js'
import { wireModules } from '../lib/modules.js'
import { packageVersion } from '../lib/release/index.js'
import { onShutdown, startRuntimeOrExit } from '../lib/runtime.js'
import { pgBossSender } from '../jobs/enqueue.js'
import { drainable } from './http/drain.js'

// The API process: config -> modules -> runtime (pool, sequencer, pg-boss, redis) -> app ->
// listen; graceful stop on SIGTERM. Embedded mode (no DATABASE_URL) starts from embedded/main.ts.
const config = loadConfigOrExit(process.env, packageVersion())
requireDatabaseUrl(config, 'API')
// The app (Koa, Apollo, every route module) loads only after the configuration is known good, so
// a bad variable ends the process at once, however heavy the app is to load.
const { createApp } = await import('./app.js')
const log = createLogger('api', config.logLevel)
const hooks = wireModules()
const rt = await startRuntimeOrExit(config, log, { worker: false })
const app = createApp({ config, db: rt.db, log, sequencer: rt.sequencer, jobs: pgBossSender(rt.boss), redis: rt.redis, hooks, stopping: () => listener.draining })
// The dry run's threads start and load their code before the first request can want them.
await warmEvaluation(config.evaluationThreads)
const server = http.createServer(app.callback())
const listener = drainable(server, log)
server.listen(config.port, () => {
  log.info({ port: config.port, release: config.release, mode: 'postgres' }, 'api listening')
})

// Readiness turns 503 and no connection is taken; the answers in progress are finished (at most
// SHUTDOWN_TIMEOUT_SECONDS), then the pool and pg-boss close.
onShutdown(log, async () => {
  // Live change streams end first (their clients resume with Last-Event-ID); then the drain.
  app.close()
  await listener.drain(config.shutdownTimeoutSeconds * 1000)
  await closeEvaluation()
  await rt.stop()
})
