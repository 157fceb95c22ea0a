import { PgBoss } from 'pg-boss'
import '../lib/modules.js'
import { loadConfigOrExit } from '../lib/config.js'
import { createDb } from '../lib/db.js'
import { createLogger } from '../lib/log.js'
import { recordRelease } from '../lib/release/index.js'
import { packageVersion } from '../lib/release/version.js'
import { distributeTenantTables } from './distribute.js'
import { migrateLatest } from './knex.js'
import { seedDemo } from './seeds/demo.js'

// The release job (Procfile `release`): migrate, distribute the tenant tables when the database is
// a Citus cluster (db/distribute.ts), install pg-boss's schema (local to the coordinator), seed the
// demo tenant, record the release, exit. Idempotent: a second run changes nothing.
const config = loadConfigOrExit(process.env, packageVersion())
const log = createLogger('setup', config.logLevel)
const db = createDb(config.databaseUrl, { poolMax: 2 })
try {
  const applied = await migrateLatest(db)
  log.info({ applied }, 'migrations applied')
  const citus = await distributeTenantTables(db)
  if (citus.distributed.length + citus.reference.length > 0) log.info(citus, 'citus: tables distributed by tenant_id')
  const boss = new PgBoss({ connectionString: config.databaseUrl, schema: 'pgboss', supervise: false, schedule: false })
  boss.on('error', err => log.error({ err }, 'pg-boss error'))
  await boss.start()
  await boss.stop({ graceful: false })
  const seeded = await seedDemo(db)
  log.info(seeded, 'demo tenant')
  await recordRelease(db, config.release)
  log.info({ release: config.release }, 'release recorded')
} catch (err) {
  log.error({ err }, 'setup failed')
  process.exitCode = 1
} finally {
  await db.destroy()
}
