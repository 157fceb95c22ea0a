import '../lib/heap.js'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import jwt from 'jsonwebtoken'
import { createDb } from '../lib/db.js'
import { autovacuumWarning, buildService, freePort, startService, waitReady, type ServiceOptions } from './support.js'
import { benchObjects } from './objects.js'
import { benchQueries } from './queries.js'
import { benchAutomation } from './automation.js'
import { benchCore, table } from './core.js'
import { benchLicense } from './license.js'
import { benchGraphql } from './graphql.js'
import { benchLayers } from './layers.js'
import { benchMerkle } from './merkle.js'
import { benchChanges } from './changes.js'
import { benchCitus } from './citus.js'
import { benchEmbedded } from './embedded.js'
import { benchFairness } from './fairness.js'
import { benchSoak } from './soak.js'
import { benchFleet } from './fleet.js'

// `npm run bench`: starts the real API as its own process on a benchmark database and prints
// each figure as a ratio against a baseline measured in the same run.
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/spatial_bench'
const SECRET = 'bench-secret-that-is-at-least-32-characters'
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)

async function ensureDatabase (): Promise<void> {
  const url = new URL(DATABASE_URL)
  const admin = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() })
  await admin.connect()
  const name = url.pathname.slice(1)
  const r = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
  if (r.rowCount === 0) await admin.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`)
  await admin.end()
}

async function resetData (): Promise<void> {
  const c = new pg.Client({ connectionString: DATABASE_URL })
  await c.connect()
  await c.query('TRUNCATE objects, object_versions, audit_events, audit_heads, audit_tree_nodes, outbox_events, counter_deltas, automation_rules CASCADE')
  // And pg-boss's jobs (its queues stay): the automation section's fetches scan the job table,
  // which earlier runs would otherwise have left growing from one run to the next.
  await c.query("DO $$ BEGIN IF to_regclass('pgboss.job') IS NOT NULL THEN TRUNCATE pgboss.job CASCADE; END IF; END $$")
  await c.end()
}


const env = { ...process.env, DATABASE_URL, AUTH_JWT_SECRET: SECRET, RATE_LIMIT_LIMIT: '100000000', LOG_LEVEL: 'error' }

function run (entry: 'server/main' | 'db/setup', extra: Record<string, string> = {}, options: ServiceOptions = {}): ChildProcess {
  return startService(entry, { ...env, ...extra }, undefined, options)
}

buildService()
await ensureDatabase()
await new Promise<void>((resolve, reject) => run('db/setup').on('exit', code => code === 0 ? resolve() : reject(new Error(`setup exited ${code}`))))
// Each run starts from an empty bench database (its own; seeding is seconds by COPY).
await resetData()
const port = await freePort()
// The automation section's receivers listen on 127.0.0.1: the API takes rules naming it.
// The changes section opens 1,000 streams of one tenant.
// The soak section asks the API for a full collection by SIGUSR2: node then writes a heap
// snapshot here, which begins with one.
const snapshotDir = mkdtempSync(path.join(tmpdir(), 'bench-heap-'))
// BENCH_API_MEMORY_MB: the API as a pod with that memory limit (deploy/kubernetes/base/api.yaml's
// is 1024), in a cgroup; node then sizes its heap by it, as in the pod.
const apiMemoryMb = process.env.BENCH_API_MEMORY_MB === undefined ? undefined : Number(process.env.BENCH_API_MEMORY_MB)
const api = run('server/main', { PORT: String(port), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', CHANGES_MAX_STREAMS_PER_TENANT: '2000' },
  { execArgv: ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`], memoryMb: apiMemoryMb })
const baseUrl = `http://127.0.0.1:${port}`
const db = createDb(DATABASE_URL, { poolMax: 16 })
try {
  await waitReady(baseUrl)
  const tokenFor = (tenant: string, roles = ['owner']) => jwt.sign({ sub: 'bench', tenant, roles }, SECRET, { algorithm: 'HS256', expiresIn: '12h' })
  const warning = await autovacuumWarning(db)
  if (warning !== null) console.log(warning)
  console.log(`bench: ${ROUNDS} alternating rounds each, medians; ratio = candidate / baseline (higher is better for ops/s)`)
  // BENCH_ONLY=core,layers,... runs only the named sections (all when unset, but `soak`, which
  // runs only when named: ten minutes); `citus` needs CITUS_BENCH_URL.
  const only = new Set((process.env.BENCH_ONLY ?? '').split(',').map(s => s.trim()).filter(Boolean))
  const wants = (section: string): boolean => only.size === 0 ? section !== 'soak' : only.has(section)
  const ctx = { db, databaseUrl: DATABASE_URL, baseUrl, tokenFor, rounds: ROUNDS }
  if (wants('core')) {
    const core = await benchCore(ctx, line => console.log(line))
    for (const line of table(core.figures)) console.log(line)
  }
  if (wants('objects')) for (const line of await benchObjects(ctx)) console.log(line)
  if (wants('queries')) await benchQueries(db, line => console.log(line))
  if (wants('automation')) await benchAutomation({ ...ctx, env, apiPid: api.pid }, line => console.log(line))
  if (wants('license')) await benchLicense(db, DATABASE_URL, ROUNDS, line => console.log(line))
  if (wants('graphql')) for (const line of await benchGraphql(ctx)) console.log(line)
  if (wants('layers')) await benchLayers({ ...ctx, apiPid: api.pid ?? 0 }, line => console.log(line))
  if (wants('merkle')) await benchMerkle(ctx, line => console.log(line))
  if (wants('changes')) await benchChanges({ ...ctx, apiPid: api.pid ?? 0 }, line => console.log(line))
  if (wants('citus')) await benchCitus({ ...ctx, env, freePort }, line => console.log(line))
  if (wants('fleet')) await benchFleet({ ...ctx, env }, line => console.log(line))
  if (wants('embedded')) for (const line of await benchEmbedded({ ...ctx, apiPid: api.pid ?? 0 })) console.log(line)
  if (wants('fairness')) await benchFairness({ ...ctx, apiPid: api.pid ?? 0 }, line => console.log(line))
  if (wants('soak')) await benchSoak({ ...ctx, env, apiPid: api.pid ?? 0, snapshotDir, apiMemoryMb }, line => console.log(line))
  else if (only.size === 0) console.log('soak: not run (only when BENCH_ONLY names it)')
} finally {
  api.kill('SIGTERM')
  await db.destroy()
  rmSync(snapshotDir, { recursive: true, force: true })
}
