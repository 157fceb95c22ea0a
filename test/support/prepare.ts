import pg from 'pg'
import { PgBoss } from 'pg-boss'
import { createDb } from '../../lib/db.js'
import { recordRelease, packageVersion } from '../../lib/release/index.js'
import { migrateLatest } from '../../db/knex.js'
import { distributeTenantTables } from '../../db/distribute.js'
import { createQueues } from '../../lib/queues/index.js'
import { TEST_DATABASE_URL } from './env.js'

// Runs once before the test files: creates the test database if missing and migrates it.
// Test files then isolate themselves by tenant, so nothing is truncated between them.
const url = new URL(TEST_DATABASE_URL)
const dbName = url.pathname.slice(1)
const admin = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() })
await admin.connect()
const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [dbName])
if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${dbName.replace(/"/g, '')}"`)
await admin.end()

const db = createDb(TEST_DATABASE_URL, { poolMax: 2 })
const applied = await migrateLatest(db)
// On a Citus cluster (npm run test:citus) the release distributes the tenant tables; so do the tests.
await distributeTenantTables(db)
await recordRelease(db, packageVersion())
await db.destroy()
// pg-boss's schema and queues, as db/setup.ts installs them: tests that send jobs or start workers need them.
const boss = new PgBoss({ connectionString: TEST_DATABASE_URL, schema: 'pgboss', supervise: false, schedule: false })
boss.on('error', () => {})
await boss.start()
await createQueues(boss)
await boss.stop({ graceful: false })
process.stdout.write(`test database ${dbName} ready (${applied.length} migration(s) applied)\n`)
