import { loadConfigOrExit } from '../lib/config.js'
import { createLogger } from '../lib/log.js'
import { packageVersion } from '../lib/release/version.js'
import { onShutdown, startRuntimeOrExit } from '../lib/runtime.js'
import { pgBossSender } from '../jobs/enqueue.js'
import { createApp } from './app.js'

// config -> runtime (db, sequencer, pg-boss, redis) -> app -> listen; graceful stop on SIGTERM.
const config = loadConfigOrExit(process.env, packageVersion())
const log = createLogger('api', config.logLevel)
const rt = await startRuntimeOrExit(config, log, { worker: false })
const app = createApp({ config, db: rt.db, log, sequencer: rt.sequencer, jobs: pgBossSender(rt.boss), redis: rt.redis })
const server = app.listen(config.port, () => log.info({ port: config.port, release: config.release }, 'api listening'))

onShutdown(log, async () => {
  await new Promise<void>(resolve => server.close(() => resolve()))
  await rt.stop()
})
