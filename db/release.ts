import type { PgBoss } from 'pg-boss'
import type { ModuleHooks } from '../lib/context.js'
import type { Db } from '../lib/db.js'
import type { Logger } from '../lib/log.js'
import { recordRelease } from '../lib/release/index.js'
import { createQueues } from '../lib/queues/index.js'
import { distributeTenantTables } from './distribute.js'
import { migrateLatest } from './knex.js'
import { seedDemo } from './seeds/demo.js'

/**
 * The release steps, shared by the release job (db/setup.ts) and embedded mode's start: migrate,
 * distribute the tenant tables when the database is a Citus cluster (db/distribute.ts), install
 * pg-boss's schema (`boss.start()`; the caller stops it or keeps it) and create every queue of
 * lib/queues/contracts.ts, seed the demo tenant, record the release. Idempotent: a second run
 * changes nothing. Once it has run, API and workers may start in any order.
 */
export async function runRelease (db: Db, boss: PgBoss, log: Logger, release: string, hooks: ModuleHooks): Promise<void> {
  const applied = await migrateLatest(db)
  log.info({ applied }, 'migrations applied')
  const citus = await distributeTenantTables(db)
  if (citus.distributed.length + citus.reference.length > 0) log.info(citus, 'citus: tables distributed by tenant_id')
  await boss.start()
  // Before any API serves: its sends (webhook triggers, rule publishes) need the queues to exist.
  await createQueues(boss)
  const seeded = await seedDemo(db, hooks)
  log.info(seeded, 'demo tenant')
  await recordRelease(db, release)
  log.info({ release }, 'release recorded')
}
