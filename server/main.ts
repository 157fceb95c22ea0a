import { loadConfigOrExit } from '../lib/config.js'
import { createLogger } from '../lib/log.js'
import { packageVersion } from '../lib/release/version.js'
import { onShutdown, startRuntimeOrExit } from '../lib/runtime.js'
import { pgBossSender } from '../jobs/enqueue.js'

// config -> runtime (db, sequencer, pg-boss, redis) -> app -> listen; graceful stop on SIGTERM.
const config = loadConfigOrExit(process.env, packageVersion())
// The app (Koa, Apollo, every route module) loads only after the configuration is known good, so
// a bad variable ends the process at once, however heavy the app is to load.
const { createApp } = await import('./app.js')
const log = createLogger('api', config.logLevel)
const rt = await startRuntimeOrExit(config, log, { worker: false })
const app = createApp({ config, db: rt.db, log, sequencer: rt.sequencer, jobs: pgBossSender(rt.boss), redis: rt.redis })
const server = app.listen(config.port, () => log.info({ port: config.port, release: config.release }, 'api listening'))

onShutdown(log, async () => {
  await new Promise<void>(resolve => server.close(() => resolve()))
  await rt.stop()
})
