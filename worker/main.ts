import pg from 'pg'
import { loadConfigOrExit } from '../lib/config.js'
import { createLogger } from '../lib/log.js'
import { packageVersion } from '../lib/release/version.js'
import { onShutdown, startRuntime } from '../lib/runtime.js'
import { createQueues } from '../jobs/enqueue.js'
import { OUTBOX_DISPATCH, type OutboxDispatchPayload } from '../jobs/contracts.js'
import { handleOutboxDispatch } from '../jobs/handlers/outbox-dispatch.js'

// config -> runtime -> queues -> handlers -> schedules; stop on SIGTERM. Scales horizontally:
// every worker competes for the same pg-boss queues and outbox rows (SKIP LOCKED).
const config = loadConfigOrExit(process.env, packageVersion())
const log = createLogger('worker', config.logLevel)
const rt = await startRuntime(config, log, { worker: true })
await createQueues(rt.boss)

await rt.boss.work<OutboxDispatchPayload>(OUTBOX_DISPATCH.name, { pollingIntervalSeconds: 1, batchSize: 1 }, jobs => handleOutboxDispatch(rt.db, log, jobs))
// Backstop: a dispatch every minute even if no notification arrives.
await rt.boss.schedule(OUTBOX_DISPATCH.name, '* * * * *', {})

// NOTIFY outbox_events (sent on commit by lib/outbox) wakes a dispatch at once, coalesced per second.
const listener = new pg.Client({ connectionString: config.databaseUrl })
listener.on('error', err => log.error({ err }, 'outbox listener error'))
await listener.connect()
await listener.query('LISTEN outbox_events')
listener.on('notification', () => {
  void rt.boss.send(OUTBOX_DISPATCH.name, {}, { singletonKey: 'outbox', singletonSeconds: 1 }).catch(err => log.error({ err }, 'outbox wake failed'))
})
log.info({ release: config.release }, 'worker started')

onShutdown(log, async () => {
  await listener.end().catch(() => {})
  await rt.stop()
})
