import '../lib/heap.js'
import http from 'node:http'
import { loadConfigOrExit } from '../lib/config.js'
import { createLogger } from '../lib/log.js'
import { wireModules } from '../lib/modules.js'
import { packageVersion } from '../lib/release/index.js'
import { onShutdown } from '../lib/runtime.js'
import { pgBossSender } from '../jobs/enqueue.js'
import { createApp } from '../server/app.js'
import { closeEvaluation, warmEvaluation } from '../lib/object-types/index.js'
import { drainable } from '../server/http/drain.js'
import { embeddedEnv } from './env.js'
import { startEmbeddedOrExit } from './start.js'

// Embedded mode (no DATABASE_URL; `npm start`): the whole service in this one process on PGlite
// in DATA_DIR: the release on start, the worker, then the API. config -> modules -> runtime ->
// worker -> app -> listen; graceful stop on SIGTERM.
const config = loadConfigOrExit(embeddedEnv(process.env), packageVersion())
if (config.databaseUrl !== null) {
  process.stderr.write('configuration error: DATABASE_URL is set: run the processes of the Procfile (web, worker, release) instead of embedded mode\n')
  process.exit(1)
}
const log = createLogger('api', config.logLevel)
const hooks = wireModules()
const { rt, stopWorker, announce } = await startEmbeddedOrExit(config, log, hooks)
const app = createApp({ config, db: rt.db, log, sequencer: rt.sequencer, jobs: pgBossSender(rt.boss), redis: rt.redis, hooks, stopping: () => listener.draining })
// The dry run's threads start and load their code before the first request can want them.
await warmEvaluation(config.evaluationThreads)
const server = http.createServer(app.callback())
const listener = drainable(server, log)
server.listen(config.port, () => {
  log.info({ port: config.port, release: config.release, mode: 'embedded' }, 'api listening')
  announce(config.port)
})

onShutdown(log, async () => {
  // Live change streams end first (their clients resume with Last-Event-ID); then the drain.
  app.close()
  await listener.drain(config.shutdownTimeoutSeconds * 1000)
  stopWorker()
  await closeEvaluation()
  await rt.stop()
})
