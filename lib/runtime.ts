import { PgBoss } from 'pg-boss'
import { Redis } from 'ioredis'
import type { Config } from './config.js'
import { createDb, type Db } from './db.js'
import type { Logger } from './log.js'
import { Sequencer } from './audit/index.js'
import { startSettingsFeed } from './settings/index.js'

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
  const db = createDb(config.databaseUrl)
  const sequencer = new Sequencer(db, err => log.error({ err }, 'audit sequencing failed'))
  sequencer.startSweeping()
  // License and policy changes made by any process reach this one at once (lib/settings).
  const feed = await startSettingsFeed(db, config.databaseUrl, log)
  // The API only sends jobs; maintenance and schedules run in the worker.
  const boss = new PgBoss({ connectionString: config.databaseUrl, schema: 'pgboss', supervise: opts.worker, schedule: opts.worker, migrate: false, max: 5, superviseIntervalSeconds: config.workerSuperviseSeconds })
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
      await boss.stop({ graceful: true, timeout: 10_000 }).catch(err => log.error({ err }, 'pg-boss stop failed'))
      await sequencer.stop()
      await feed.stop()
      redis?.disconnect()
      await db.destroy()
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
