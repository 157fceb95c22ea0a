import '../lib/heap.js'
import http from 'node:http'
import { loadConfigOrExit, requireDatabaseUrl } from '../lib/config.js'
import { createLogger } from '../lib/log.js'
import { wireModules } from '../lib/modules.js'
import { packageVersion } from '../lib/release/index.js'
import { onShutdown, startRuntimeOrExit } from '../lib/runtime.js'
import { pgBossSender } from '../jobs/enqueue.js'

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
const app = createApp({ config, db: rt.db, log, sequencer: rt.sequencer, jobs: pgBossSender(rt.boss), redis: rt.redis, hooks })
const server = http.createServer(app.callback()).listen(config.port, () => {
  log.info({ port: config.port, release: config.release, mode: 'postgres' }, 'api listening')
})

onShutdown(log, async () => {
  // Live change streams end first (their clients resume elsewhere); close waits for open connections.
  app.close()
  await new Promise<void>(resolve => server.close(() => resolve()))
  await rt.stop()
})
