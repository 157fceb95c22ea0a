import { PgBoss } from 'pg-boss'
import { Redis } from 'ioredis'
import type { Config } from './config.js'
import { createDb, type Db } from './db.js'
import type { Logger } from './log.js'
import { Sequencer } from './audit/index.js'
import { startInProcessSettingsFeed, startSettingsFeed } from './settings/index.js'

/**
 * What both the API and the worker hold for their lifetime: the pool, the audit sequencer,
 * pg-boss and (optionally) Redis, with one orderly stop.
 */
export interface Runtime {
  db: Db
  sequencer: Sequencer
  boss: PgBoss
  redis: Redis | null
  stop (): Promise<void>
}

export async function startRuntime (config: Readonly<Config>, log: Logger, opts: { worker: boolean }): Promise<Runtime> {
  const databaseUrl = config.databaseUrl
  if (databaseUrl === null) throw new Error('startRuntime needs DATABASE_URL; embedded mode starts through startEmbeddedRuntime')
  // The API's statements answer requests and are bounded (DB_STATEMENT_TIMEOUT_MS); a worker's
  // jobs (a layer's low-zoom prerender, the retention batches) may run as long as they need.
  const db = createDb(databaseUrl, { statementTimeoutMs: opts.worker ? 0 : config.dbStatementTimeoutMs })
  const sequencer = new Sequencer(db, err => log.error({ err }, 'audit sequencing failed'))
  sequencer.startSweeping()
  // License and policy changes made by any process reach this one at once (lib/settings).
  const feed = await startSettingsFeed(db, databaseUrl, log)
  // The API only sends jobs; maintenance and schedules run in the worker.
  const boss = new PgBoss({ connectionString: databaseUrl, schema: 'pgboss', supervise: opts.worker, schedule: opts.worker, migrate: false, max: 5, superviseIntervalSeconds: config.workerSuperviseSeconds })
  boss.on('error', err => log.error({ err }, 'pg-boss error'))
  await boss.start()
  let redis: Redis | null = null
  if (config.redisUrl !== null) {
    redis = new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
    redis.on('error', err => log.warn({ err: { message: err.message } }, 'redis error; falling back to in-process limits'))
  }
  return {
    db, sequencer, boss, redis,
    async stop () {
      // pg-boss stops fetching, waits for the active jobs, then fails those still running, which
      // pg-boss retries on another worker.
      await boss.stop({ graceful: true, timeout: config.shutdownTimeoutSeconds * 1000 }).catch(err => log.error({ err }, 'pg-boss stop failed'))
      await sequencer.stop()
      await feed.stop()
      redis?.disconnect()
      await db.destroy()
    }
  }
}

/** The release steps (db/release.ts), run by embedded mode on its own database at every start. */
export type Release = (db: Db, boss: PgBoss, log: Logger, release: string) => Promise<void>

/**
 * Embedded mode (no DATABASE_URL; lib/embedded): PGlite under config.dataDir, locked to this
 * process; the release runs on it (migrations, pg-boss schema, demo tenant), then one pg-boss
 * serves both the API's sends and the worker's queues over knex's single connection.
 */
export async function startEmbeddedRuntime (config: Readonly<Config>, log: Logger, release: Release): Promise<Runtime> {
  // Loaded only here: a PostgreSQL-mode process never loads PGlite.
  const { fromKnexPglite, openEmbedded, probeEngine } = await import('./embedded/index.js')
  const embedded = await openEmbedded(config.dataDir)
  const { db } = embedded
  const boss = new PgBoss({ db: fromKnexPglite(db), backend: 'pglite', schema: 'pgboss', supervise: true, schedule: true, migrate: true, superviseIntervalSeconds: config.workerSuperviseSeconds })
  boss.on('error', err => log.error({ err }, 'pg-boss error'))
  try {
    await release(db, boss, log, config.release)
    await probeEngine(db)
  } catch (err) {
    await boss.stop({ graceful: false }).catch(() => {})
    await embedded.close()
    throw err
  }
  const sequencer = new Sequencer(db, err => log.error({ err }, 'audit sequencing failed'))
  sequencer.startSweeping()
  const feed = await startInProcessSettingsFeed(db, (channel, onPayload) => embedded.pglite.listen(channel, onPayload))
  return {
    db, sequencer, boss, redis: null,
    async stop () {
      await boss.stop({ graceful: true, timeout: config.shutdownTimeoutSeconds * 1000 }).catch(err => log.error({ err }, 'pg-boss stop failed'))
      await sequencer.stop()
      await feed.stop()
      await embedded.close()
    }
  }
}

/** Like startRuntime, but an unreachable database ends the process with one line (and exit 1). */
export async function startRuntimeOrExit (config: Readonly<Config>, log: Logger, opts: { worker: boolean }): Promise<Runtime> {
  try {
    return await startRuntime(config, log, opts)
  } catch (err) {
    process.stderr.write(`startup failed: cannot reach the database at DATABASE_URL (${(err as Error).message})\n`)
    process.exit(1)
  }
}

/** SIGTERM/SIGINT run `stop` once, then exit; a second signal exits at once. */
export function onShutdown (log: Logger, stop: () => Promise<void>): void {
  let stopping = false
  const handler = (signal: string) => {
    if (stopping) process.exit(1)
    stopping = true
    log.info({ signal }, 'shutting down')
    stop().then(() => process.exit(0), err => { log.error({ err }, 'shutdown failed'); process.exit(1) })
  }
  process.on('SIGTERM', () => handler('SIGTERM'))
  process.on('SIGINT', () => handler('SIGINT'))
}
