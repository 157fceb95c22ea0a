import '../lib/heap.js'
import { loadConfigOrExit } from '../lib/config.js'
import { createLogger } from '../lib/log.js'
import { packageVersion } from '../lib/release/index.js'
import { onShutdown, startRuntimeOrExit, type Runtime } from '../lib/runtime.js'
import { pgBossSender } from '../jobs/enqueue.js'
import { embeddedEnv } from './embedded-env.js'

// config -> runtime (db, sequencer, pg-boss, redis) -> app -> listen; graceful stop on SIGTERM.
// Without DATABASE_URL: embedded mode (server/embedded.ts), the whole service in this process.
const config = loadConfigOrExit(embeddedEnv(process.env), packageVersion())
// The app (Koa, Apollo, every route module) loads only after the configuration is known good, so
// a bad variable ends the process at once, however heavy the app is to load.
const { createApp } = await import('./app.js')
const log = createLogger('api', config.logLevel)
let rt: Runtime
let stopWorker = () => {}
let announce = (_port: number) => {}
if (config.databaseUrl === null) {
  const embedded = await import('./embedded.js')
  ;({ rt, stopWorker, announce } = await embedded.startEmbeddedOrExit(config, log))
} else {
  rt = await startRuntimeOrExit(config, log, { worker: false })
}
const app = createApp({ config, db: rt.db, log, sequencer: rt.sequencer, jobs: pgBossSender(rt.boss), redis: rt.redis })
const server = app.listen(config.port, () => {
  log.info({ port: config.port, release: config.release, mode: config.databaseUrl === null ? 'embedded' : 'postgres' }, 'api listening')
  announce(config.port)
})

onShutdown(log, async () => {
  await new Promise<void>(resolve => server.close(() => resolve()))
  stopWorker()
  await rt.stop()
})
