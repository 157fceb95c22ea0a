import { PgBoss } from 'pg-boss'
import { loadConfigOrExit, requireDatabaseUrl } from '../lib/config.js'
import { createDb } from '../lib/db.js'
import { createLogger } from '../lib/log.js'
import { wireModules } from '../lib/modules.js'
import { packageVersion } from '../lib/release/index.js'
import { runRelease } from './release.js'

// The release job (Procfile `release`): migrate, distribute the tenant tables when the database is
// a Citus cluster (db/distribute.ts), install pg-boss's schema (local to the coordinator), seed the
// demo tenant, record the release, exit. Idempotent: a second run changes nothing.
const config = loadConfigOrExit(process.env, packageVersion())
const databaseUrl = requireDatabaseUrl(config, 'release job')
const log = createLogger('setup', config.logLevel)
const db = createDb(databaseUrl, { poolMax: 2 })
try {
  const boss = new PgBoss({ connectionString: databaseUrl, schema: 'pgboss', supervise: false, schedule: false })
  boss.on('error', err => log.error({ err }, 'pg-boss error'))
  try {
    await runRelease(db, boss, log, config.release, wireModules())
  } finally {
    await boss.stop({ graceful: false }).catch(() => {})
  }
} catch (err) {
  log.error({ err }, 'setup failed')
  process.exitCode = 1
} finally {
  await db.destroy()
}
