import type { ChildProcess } from 'node:child_process'
import { request as httpRequest } from 'node:http'
import { once } from 'node:events'
import { PgBoss, type Job } from 'pg-boss'
import type { Db } from '../lib/db.js'
import { backendSeconds, benchTenant, cpuTimes, http, median, percentile, row, startService, throughput, type ServiceOptions } from './support.js'
import { DELIVERY_LOOPS, RUN_LOOPS } from '../worker/automation.js'
import { workInLoops, type LoopOptions } from '../worker/loops.js'
import { startReceiver, type Receiver } from '../test/support/automation.js'
import { QUEUES, createQueues } from '../lib/queues/index.js'
import * as queues from '../lib/queues/index.js'

// Automation end to end (issue 13, item 9): runs per second from ingress 202 to the effect
// committed, with one and with two worker processes in alternating rounds, against pg-boss's own
// send -> work rate in the same rounds (the automation.run worker's own loops, RUN_LOOPS and
// workInLoops, woken by each send as announced jobs wake a worker's), each side once untimed first
// (fresh worker processes spend their first runs compiling). Then event -> run and webhook
// ingress -> run latency at low load against pg-boss's own send -> start latency (with its
// LISTEN/NOTIFY), and the outbox against a backlog.

export interface AutomationBenchEnv {
  db: Db
  databaseUrl: string
  baseUrl: string
  tokenFor: (tenant: string) => string
  /** Environment of the worker processes. */
  env: Record<string, string | undefined>
  rounds: number
  /** The API process (CPU per ingress call in the split figures). */
  apiPid?: number
}

const RUNS = Number(process.env.BENCH_AUTOMATION_RUNS ?? 400)
const CLIENTS = 16
// Objects the webhook runs update, round robin: fewer objects, more runs wait on one row's lock.
const OBJECTS = Number(process.env.BENCH_AUTOMATION_OBJECTS ?? 64)
const BASELINE_QUEUE = 'bench.noop'
const LATENCY_QUEUE = 'bench.latency'

/** `n` worker processes (`options`: a CPU limit, node options), each once it announced its start. */
export async function startWorkers (env: AutomationBenchEnv['env'], n: number, options: ServiceOptions = {}): Promise<ChildProcess[]> {
  return Promise.all(Array.from({ length: n }, async () => {
    // Private networks allowed: the webhook section's receiver listens on 127.0.0.1.
    const child = startService('worker/main', { ...env, LOG_LEVEL: 'info', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, ['ignore', 'pipe', 'inherit'], options)
    let out = ''
    const listen = (d: Buffer): void => { out += String(d) }
    child.stdout!.on('data', listen)
    for (let i = 0; i < 300 && !/worker started/.test(out); i++) await new Promise(r => setTimeout(r, 100))
    // Its later lines (one per job) are read and dropped: kept, they would grow for as long as it runs.
    child.stdout!.off('data', listen)
    child.stdout!.resume()
    return child
  }))
}

export async function stopWorkers (workers: ChildProcess[]): Promise<void> {
  await Promise.all(workers.map(async w => { w.kill('SIGTERM'); await once(w, 'exit') }))
}

async function post (env: Pick<AutomationBenchEnv, 'baseUrl'>, path: string, token: string, body: unknown): Promise<any> {
  const res = await fetch(env.baseUrl + path, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${text}`)
  return JSON.parse(text)
}

/** A tenant, its objects, and one active rule triggered by ingress calls to `slug`. */
export interface Fixture { tenant: string, token: string, ruleId: string, webhookToken: string, slug: string, objectIds: string[] }

/** A type with a workflow-less pool of `objects` objects and an active rule: webhook -> object.update. */
export async function fixture (env: Pick<AutomationBenchEnv, 'baseUrl' | 'tokenFor'>, objects = OBJECTS): Promise<Fixture> {
  const tenant = benchTenant('automation')
  const token = env.tokenFor(tenant)
  const type = await post(env, '/v1/object-types', token, { key: 'probe', name: 'Probe', attributeSchema: { type: 'object', properties: { n: { type: 'number' } } } })
  await post(env, `/v1/object-types/${type.id}/publish`, token, { to: 'published' })
  const objectIds: string[] = []
  for (let i = 0; i < objects; i++) objectIds.push((await post(env, '/v1/objects', token, { typeId: type.id, attributes: { n: 0 } })).id)
  const rule = await post(env, '/v1/automation/rules', token, {
    name: 'bench', trigger: { type: 'webhook', slug: 'bench' },
    effect: { type: 'object.update', objectId: '{{payload.id}}', attributes: { n: '{{payload.n}}' } }
  })
  await post(env, `/v1/automation/rules/${rule.id}/publish`, token, { to: 'active' })
  return { tenant, token, ruleId: rule.id, webhookToken: rule.webhookToken, slug: 'bench', objectIds }
}

/**
 * Runs of this round finished: those queued since `since` only (index automation_runs_rule_queued),
 * so that the count does not grow with the rounds before it.
 */
async function finished (db: Db, f: Fixture, since: Date): Promise<number> {
  const r = await db.raw("SELECT count(*)::int AS n FROM automation_runs WHERE tenant_id = ? AND rule_id = ? AND queued_at >= ? AND status IN ('succeeded', 'failed')", [f.tenant, f.ruleId, since])
  return r.rows[0].n
}

/**
 * Whether a run of this round is still queued or running, looked for from the newest end of the
 * same index: while the round runs the newest runs are the unfinished ones, so the look, every 20
 * ms, reads a row or two. (A count of the finished ones would read all of them at every look,
 * database CPU the observer takes from the side it observes, while pg-boss's side is observed in
 * process at no cost.)
 */
async function unfinished (db: Db, f: Fixture, since: Date, runs: number): Promise<boolean> {
  // The inner LIMIT keeps the planner on the index, newest first; the outer one stops at the first found.
  const r = await db.raw(`SELECT 1 FROM (
      SELECT status FROM automation_runs WHERE tenant_id = ? AND rule_id = ? AND queued_at >= ? ORDER BY queued_at DESC LIMIT ?
    ) r WHERE status IN ('queued', 'running') LIMIT 1`, [f.tenant, f.ruleId, since, runs])
  return r.rows.length > 0
}

/**
 * `runs` ingress calls (RUNS by default) from CLIENTS clients, through the bench's keep-alive
 * client of the other sections (fetch costs this load generator more CPU per call, on the two
 * cores the API, the workers and PostgreSQL share).
 */
export async function ingressCalls (env: Pick<AutomationBenchEnv, 'baseUrl'>, f: Fixture, runs = RUNS): Promise<void> {
  await throughput(runs, CLIENTS, async i => {
    await http(env, f.webhookToken, 'POST', `/v1/automation/triggers/${f.slug}`, { id: f.objectIds[i % f.objectIds.length], n: i })
  })
}

/** RUNS ingress calls from CLIENTS clients; runs/s until the last run's effect is committed. */
async function endToEnd (env: AutomationBenchEnv, f: Fixture): Promise<number> {
  const since = new Date(Date.now() - 1)
  const t0 = process.hrtime.bigint()
  await ingressCalls(env, f)
  await roundFinished(env.db, f, since)
  return RUNS / (Number(process.hrtime.bigint() - t0) / 1e9)
}

/**
 * Waits until the `runs` runs queued since `since` have finished, then checks that they all did.
 * Called once every ingress call of the round has answered 202, so every run of the round is
 * written: none unfinished is all finished.
 */
export async function roundFinished (db: Db, f: Fixture, since: Date, runs = RUNS): Promise<void> {
  while (await unfinished(db, f, since, runs)) await new Promise(r => setTimeout(r, 20))
  const n = await finished(db, f, since)
  if (n !== runs) throw new Error(`automation bench: ${n} of ${runs} runs succeeded or failed`)
}

/**
 * Where the end-to-end time goes: RUNS ingress calls with no worker running (the API's share,
 * runs/s accepted), then `n` workers drain them (runs/s from the first run started to the last
 * finished, by the database's clock).
 */
async function split (env: AutomationBenchEnv, f: Fixture, n: number): Promise<{ ingress: number, drain: number, cpu: { worker: number, database: number } | null, ingressCpu: { api: number, database: number } | null }> {
  const mark = new Date()
  const t0 = process.hrtime.bigint()
  const apiBefore = env.apiPid === undefined ? null : await cpuTimes(env.db, [env.apiPid])
  await ingressCalls(env, f)
  const ingress = RUNS / (Number(process.hrtime.bigint() - t0) / 1e9)
  const apiAfter = env.apiPid === undefined ? null : await cpuTimes(env.db, [env.apiPid])
  let ingressCpu: { api: number, database: number } | null = null
  if (apiBefore !== null && apiAfter !== null) ingressCpu = { api: (apiAfter.workers - apiBefore.workers) / RUNS, database: backendSeconds(apiBefore, apiAfter) / RUNS }
  const workers = await startWorkers(env.env, n)
  let cpu: { worker: number, database: number } | null = null
  try {
    const before = await cpuTimes(env.db, workers.map(w => w.pid!))
    await roundFinished(env.db, f, mark)
    const after = await cpuTimes(env.db, workers.map(w => w.pid!))
    if (before !== null && after !== null) cpu = { worker: (after.workers - before.workers) / RUNS, database: backendSeconds(before, after) / RUNS }
  } finally {
    await stopWorkers(workers)
  }
  return { ingress, drain: RUNS / await drainSeconds(env.db, f, mark), cpu, ingressCpu }
}

/** Seconds from the first run queued since `since` started to the last finished, by the database's clock. */
export async function drainSeconds (db: Db, f: Fixture, since: Date): Promise<number> {
  const r = await db.raw('SELECT extract(epoch FROM max(finished_at) - min(started_at))::float8 AS s FROM automation_runs WHERE tenant_id = ? AND rule_id = ? AND queued_at >= ?', [f.tenant, f.ruleId, since])
  return r.rows[0].s
}

/**
 * pg-boss alone: RUNS sends from CLIENTS senders, worked in this process by `workers` sets of the
 * worker's own loops (workInLoops with `options`), timed until `done` holds. Each send wakes the
 * loops, as the platform's senders announce their jobs to the workers (lib/queues `announceQueued`).
 */
async function bossRate (boss: PgBoss, workers: number, options: LoopOptions, handler: (jobs: Array<Job<{ i: number }>>) => Promise<void>, done: () => boolean): Promise<number> {
  const sets = await Promise.all(Array.from({ length: workers }, () => workInLoops(boss, BASELINE_QUEUE, options, handler)))
  const t0 = process.hrtime.bigint()
  await throughput(RUNS, CLIENTS, async i => {
    await boss.send(BASELINE_QUEUE, { i })
    for (const set of sets) set.wake()
  })
  await until(done, 'pg-boss baseline')
  const rate = RUNS / (Number(process.hrtime.bigint() - t0) / 1e9)
  for (const set of sets) {
    set.stop()
    for (const id of set.ids) await boss.offWork(BASELINE_QUEUE, { id })
  }
  return rate
}

/** The run queue's baseline: jobs handled by doing nothing, on the run loops (RUN_LOOPS). */
async function bossRunRate (boss: PgBoss, workers: number): Promise<number> {
  let handled = 0
  return bossRate(boss, workers, RUN_LOOPS, async jobs => { handled += jobs.length }, () => handled >= RUNS)
}

async function until (done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 6000 && !done(); i++) await new Promise(r => setTimeout(r, 10))
  if (!done()) throw new Error(`automation bench: ${what} did not finish within a minute`)
}

/**
 * Webhook effects, against the tests' local receiver (test/support/automation.ts), which answers
 * every call at once. Ours: RUNS ingress calls to a rule whose effect calls the receiver, timed
 * until the receiver got them all (ingress, run, the webhook.deliver job, the signed call, its
 * record). Baseline: pg-boss's own send -> work, each job posting the same body to the same
 * receiver from the loops the worker delivers with (DELIVERY_LOOPS), through node:http's default
 * agent as ours does.
 */
export async function webhookRule (env: Pick<AutomationBenchEnv, 'baseUrl'>, f: Fixture, url: string): Promise<Fixture> {
  const rule = await post(env, '/v1/automation/rules', f.token, { name: 'webhook bench', trigger: { type: 'webhook', slug: 'hook' }, effect: { type: 'webhook', url: `${url}/hook`, body: { n: '{{payload.n}}' } } })
  await post(env, `/v1/automation/rules/${rule.id}/publish`, f.token, { to: 'active' })
  return { ...f, ruleId: rule.id, webhookToken: rule.webhookToken, slug: 'hook' }
}

async function webhookRate (env: AutomationBenchEnv, hook: Fixture, receiver: Receiver): Promise<number> {
  const want = receiver.received.length + RUNS
  const t0 = process.hrtime.bigint()
  await ingressCalls(env, hook)
  await until(() => receiver.received.length >= want, 'webhook deliveries')
  return RUNS / (Number(process.hrtime.bigint() - t0) / 1e9)
}

function postTo (url: string, n: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const body = JSON.stringify({ n })
    const req = httpRequest(`${url}/hook`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, res => { res.resume(); res.on('end', () => resolve()) })
    req.on('error', reject)
    req.end(body)
  })
}

async function bossWebhookRate (boss: PgBoss, receiver: Receiver): Promise<number> {
  const want = receiver.received.length + RUNS
  return bossRate(boss, 1, DELIVERY_LOOPS, async jobs => { for (const j of jobs) await postTo(receiver.url, j.data.i) }, () => receiver.received.length >= want)
}

/**
 * Between phases: what autovacuum would have done meanwhile (this machine's CI server runs with
 * autovacuum off), so that a phase does not pay for the dead job and run rows of the one before.
 */
export async function settle (db: Db, more: string[] = []): Promise<void> {
  for (const t of ['pgboss.job', 'automation_runs', 'outbox_events', 'counter_deltas', ...more]) await db.raw(`VACUUM ANALYZE ${t}`)
}

/** Event -> run start at low load: one PATCH at a time, a rule on object.updated. */
async function eventLatency (env: AutomationBenchEnv, f: Fixture, samples: number): Promise<number[]> {
  const rule = await post(env, '/v1/automation/rules', f.token, { name: 'latency', trigger: { type: 'object.event', events: ['object.updated'] }, effect: { type: 'webhook', url: 'http://127.0.0.1:9/' } })
  await post(env, `/v1/automation/rules/${rule.id}/publish`, f.token, { to: 'sandbox' })
  const id = f.objectIds[0]
  for (let i = 0; i < samples; i++) {
    const current = await (await fetch(`${env.baseUrl}/v1/objects/${id}`, { headers: { Authorization: `Bearer ${f.token}` } })).json() as { version: number }
    await fetch(`${env.baseUrl}/v1/objects/${id}`, { method: 'PATCH', headers: { Authorization: `Bearer ${f.token}`, 'Content-Type': 'application/json', 'If-Match': String(current.version) }, body: JSON.stringify({ attributes: { n: -i } }) })
    const want = i + 1
    for (;;) {
      const r = await env.db.raw('SELECT count(*)::int AS n FROM automation_runs WHERE tenant_id = ? AND rule_id = ? AND finished_at IS NOT NULL', [f.tenant, rule.id])
      if (r.rows[0].n >= want) break
      await new Promise(r => setTimeout(r, 10))
    }
    await new Promise(r => setTimeout(r, 100 + Math.random() * 400))
  }
  // Off again: left live, it would add a dry run to every run of the phases after this one (each
  // object.update effect emits object.updated), doubling what two workers are measured on.
  await post(env, `/v1/automation/rules/${rule.id}/deactivate`, f.token, {})
  const r = await env.db.raw(`
    SELECT extract(epoch FROM r.started_at - e.created_at)::float8 AS s FROM automation_runs r
    JOIN outbox_events e ON e.tenant_id = r.tenant_id AND e.id = (r.trigger->>'eventId')::uuid
    WHERE r.tenant_id = ? AND r.rule_id = ?`, [f.tenant, rule.id])
  return r.rows.map((x: { s: number }) => x.s * 1000)
}

/** Webhook ingress -> run start at low load: one call at a time, each waited for (the fixture's rule). */
async function ingressLatency (env: AutomationBenchEnv, f: Fixture, samples: number): Promise<number[]> {
  const since = new Date(Date.now() - 1)
  for (let i = 0; i < samples; i++) {
    const at = new Date(Date.now() - 1)
    await http(env, f.webhookToken, 'POST', `/v1/automation/triggers/${f.slug}`, { id: f.objectIds[i % f.objectIds.length], n: i })
    await roundFinished(env.db, f, at, 1)
    await new Promise(r => setTimeout(r, 100 + Math.random() * 400))
  }
  const r = await env.db.raw('SELECT extract(epoch FROM started_at - queued_at)::float8 AS s FROM automation_runs WHERE tenant_id = ? AND rule_id = ? AND queued_at >= ?', [f.tenant, f.ruleId, since])
  return r.rows.map((x: { s: number }) => x.s * 1000)
}

/**
 * Outbox dispatch against a backlog: BACKLOG object.updated events of another tenant (no rules)
 * written in one statement, as a burst of creates would leave them; events/s until none is
 * pending, then event -> run latency for `samples` while the same backlog is being drained.
 */
const BACKLOG = Number(process.env.BENCH_OUTBOX_BACKLOG ?? 20000)

async function seedBacklog (db: Db, n: number): Promise<void> {
  await db.raw(`INSERT INTO outbox_events (tenant_id, type, aggregate_type, aggregate_id, payload)
    SELECT ?, 'object.updated', 'object', gen_random_uuid()::text, jsonb_build_object('object', jsonb_build_object('typeId', gen_random_uuid()), 'previous', null)
    FROM generate_series(1, ?)`, [benchTenant('backlog'), n])
}

/** Jobs of the application's queues being worked right now (a worker is stopped only when none of them is its). */
export async function activeJobs (db: Db): Promise<number> {
  return (await queues.depth(db, QUEUES.map(q => q.name))).filter(r => r.state === 'active').reduce((n, r) => n + r.n, 0)
}

export async function pendingCount (db: Db): Promise<number> {
  return (await db.raw('SELECT count(*)::int AS n FROM outbox_events WHERE delivered_at IS NULL')).rows[0].n
}

async function drainRate (db: Db): Promise<number> {
  await seedBacklog(db, BACKLOG)
  const t0 = process.hrtime.bigint()
  while (await pendingCount(db) > 0) await new Promise(r => setTimeout(r, 50))
  return BACKLOG / (Number(process.hrtime.bigint() - t0) / 1e9)
}

async function bossLatency (databaseUrl: string, samples: number): Promise<number[]> {
  // pg-boss at its quickest: its own LISTEN/NOTIFY, the send's NOTIFY waking the worker at once.
  const boss = new PgBoss({ connectionString: databaseUrl, schema: 'pgboss', supervise: false, schedule: false, migrate: false, max: 4, useListenNotify: true })
  boss.on('error', () => {})
  await boss.start()
  const waits: number[] = []
  try {
    await boss.createQueue(LATENCY_QUEUE, { retryLimit: 0, notify: true })
    let sentAt = 0
    let resolve: () => void = () => {}
    await boss.work(LATENCY_QUEUE, { batchSize: 1 }, async () => { waits.push(performance.now() - sentAt); resolve() })
    for (let i = 0; i < samples; i++) {
      const got = new Promise<void>(r => { resolve = r })
      sentAt = performance.now()
      await boss.send(LATENCY_QUEUE, { i })
      await got
      await new Promise(r => setTimeout(r, 100 + Math.random() * 400))
    }
  } finally {
    await boss.stop({ graceful: false })
  }
  return waits
}

/**
 * BENCH_STATEMENTS=1: where each side's database time goes, from pg_stat_statements (which needs
 * `shared_preload_libraries = 'pg_stat_statements'` and a restart; without it this says so and
 * the bench goes on). The statements of the bench database, their calls and execution time.
 */
export type Statements = Map<string, { query: string, calls: number, ms: number }>

/** Whether pg_stat_statements can be read here (the extension created in the bench database once). */
export async function statementsAvailable (db: Db): Promise<boolean> {
  try {
    await db.raw('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    return await statementsSnapshot(db) !== null
  } catch {
    return false
  }
}

export async function statementsSnapshot (db: Db): Promise<Statements | null> {
  try {
    const r = await db.raw(`SELECT queryid::text AS id, regexp_replace(left(query, 110), '\\s+', ' ', 'g') AS query, calls::float8 AS calls, total_exec_time AS ms
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'`)
    return new Map(r.rows.map((x: { id: string, query: string, calls: number, ms: number }) => [x.id, x]))
  } catch {
    return null
  }
}

export function addDelta (into: Statements, before: Statements, after: Statements): void {
  for (const [id, a] of after) {
    const b = before.get(id)
    const calls = a.calls - (b?.calls ?? 0)
    if (calls <= 0) continue
    const t = into.get(id) ?? { query: a.query, calls: 0, ms: 0 }
    t.calls += calls
    t.ms += a.ms - (b?.ms ?? 0)
    into.set(id, t)
  }
}

/** The statements that took the most execution time, per run. */
export function statementLines (s: Statements, runs: number, top = 14): string[] {
  const total = [...s.values()].reduce((n, x) => n + x.ms, 0)
  return [`  statements, execution time per run: ${(total / runs * 1000).toFixed(0)} us in all`,
    ...[...s.values()].sort((a, b) => b.ms - a.ms).slice(0, top).map(x =>
      `    ${(x.ms / runs * 1000).toFixed(0).padStart(5)} us  ${(x.calls / runs).toFixed(2).padStart(6)} calls  ${x.query}`)]
}

export async function benchAutomation (env: AutomationBenchEnv, print: (line: string) => void): Promise<void> {
  const boss = new PgBoss({ connectionString: env.databaseUrl, schema: 'pgboss', supervise: false, schedule: false, migrate: false, max: 10 })
  boss.on('error', () => {})
  await boss.start()
  await boss.createQueue(BASELINE_QUEUE, { retryLimit: 0 })
  // The ingress sends to the application's queues, which a fresh database has only once a worker started.
  await createQueues(boss)
  const f = await fixture(env)
  await settle(env.db)
  try {
    // BENCH_AUTOMATION_SPLIT=1 adds the split figures; =only prints nothing else (BENCH_AUTOMATION_WORKERS=1,2 by default).
    const splitMode = process.env.BENCH_AUTOMATION_SPLIT
    if (splitMode === '1' || splitMode === 'only') {
      for (const n of (process.env.BENCH_AUTOMATION_WORKERS ?? '1,2').split(',').map(Number)) {
        const x = await split(env, f, n)
        const ms = (v: number) => `${(v * 1000).toFixed(2)} ms`
        const cpu = (x.ingressCpu === null ? '' : `; CPU per ingress call: API ${ms(x.ingressCpu.api)}, database ${ms(x.ingressCpu.database)}`) +
          (x.cpu === null ? '' : `; CPU per run drained: workers ${ms(x.cpu.worker)}, database ${ms(x.cpu.database)}`)
        print(`automation split, ${n} worker(s): ingress ${x.ingress.toFixed(0)} runs/s accepted, workers drain ${x.drain.toFixed(0)} runs/s${cpu}`)
      }
      if (splitMode === 'only') return
    }
    // One and two workers in alternating rounds of the same two processes: for the one-worker
    // rounds the second is stopped (SIGSTOP, once no job of it is active), so the machine's drift
    // and the tables' growth over the run hit both alike. Each side runs once untimed first.
    const workers = await startWorkers(env.env, 2)
    const second = workers[1]
    let running = 2
    const use = async (n: number) => {
      if (n === running) return
      if (n === 1) {
        for (let i = 0; i < 100 && await activeJobs(env.db) > 0; i++) await new Promise(r => setTimeout(r, 20))
        second.kill('SIGSTOP')
      } else second.kill('SIGCONT')
      running = n
    }
    try {
      // CPU per run of the measured rounds: API, workers and every backend of the bench database,
      // from /proc; steadier than rates on a shared machine.
      const sides = [1, 2].map(n => ({ n, rates: [] as number[], boss: [] as number[], cpu: { api: 0, workers: 0, database: 0, runs: 0 }, statements: new Map() as Statements }))
      const withStatements = process.env.BENCH_STATEMENTS === '1' && await statementsAvailable(env.db)
      if (process.env.BENCH_STATEMENTS === '1' && !withStatements) print('  (BENCH_STATEMENTS: pg_stat_statements is not loaded on this server; no statement figures)')
      const ours = async (side: typeof sides[number], timed: boolean): Promise<void> => {
        await use(side.n)
        if (!timed) { await endToEnd(env, f); return }
        const before = await cpuTimes(env.db, workers.map(w => w.pid!))
        const apiBefore = env.apiPid === undefined ? null : await cpuTimes(env.db, [env.apiPid])
        const stmtsBefore = withStatements ? await statementsSnapshot(env.db) : null
        const rate = await endToEnd(env, f)
        const stmtsAfter = stmtsBefore === null ? null : await statementsSnapshot(env.db)
        if (stmtsBefore !== null && stmtsAfter !== null) addDelta(side.statements, stmtsBefore, stmtsAfter)
        const after = await cpuTimes(env.db, workers.map(w => w.pid!))
        const apiAfter = env.apiPid === undefined ? null : await cpuTimes(env.db, [env.apiPid])
        side.rates.push(rate)
        if (before !== null && after !== null && apiBefore !== null && apiAfter !== null) {
          side.cpu.database += backendSeconds(before, after)
          side.cpu.workers += after.workers - before.workers
          side.cpu.api += apiAfter.workers - apiBefore.workers
          side.cpu.runs += RUNS
        }
      }
      for (const side of sides) { await bossRunRate(boss, side.n); await ours(side, false) }
      for (let r = 0; r < env.rounds; r++) {
        for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
          side.boss.push(await bossRunRate(boss, side.n))
          await ours(side, true)
        }
      }
      for (const side of sides) {
        const rate = median(side.rates)
        const base = median(side.boss)
        print(row(`automation runs/s, ingress -> effect, ${side.n} worker(s)`, { candidate: rate, baseline: base, ratio: rate / base }, 'runs/s'))
        const c = side.cpu
        if (c.runs > 0) {
          const ms = (v: number) => `${(v / c.runs * 1000).toFixed(2)} ms`
          print(`  CPU per run end to end, ${side.n} worker(s): API ${ms(c.api)}, workers ${ms(c.workers)}, database ${ms(c.database)}, total ${ms(c.api + c.workers + c.database)}`)
        }
        if (side.statements.size > 0) for (const line of statementLines(side.statements, RUNS * env.rounds)) print(line)
      }
      const wins = sides[0].rates.filter((one, r) => sides[1].rates[r] > one).length
      print(`two workers / one worker: ${(median(sides[1].rates) / median(sides[0].rates)).toFixed(2)} (medians); two ahead in ${wins} of ${env.rounds} rounds (${sides[0].rates.map((one, r) => `${one.toFixed(0)}/${sides[1].rates[r].toFixed(0)}`).join(', ')})`)

      await use(1)
      await settle(env.db)
      const receiver = await startReceiver()
      try {
        const hook = await webhookRule(env, f, receiver.url)
        await bossWebhookRate(boss, receiver)
        await webhookRate(env, hook, receiver)
        const theirs: number[] = []
        const ours: number[] = []
        for (let r = 0; r < env.rounds; r++) {
          theirs.push(await bossWebhookRate(boss, receiver))
          ours.push(await webhookRate(env, hook, receiver))
        }
        const rate = median(ours)
        const base = median(theirs)
        print(row('webhook effect runs/s, ingress -> received, 1 worker', { candidate: rate, baseline: base, ratio: rate / base }, 'runs/s') + ' (vs pg-boss send -> work posting alike)')
      } finally {
        await receiver.close()
      }
      await settle(env.db)
      const samples = Number(process.env.BENCH_LATENCY_SAMPLES ?? 20)
      const latencies = { event: await eventLatency(env, f, samples), 'webhook ingress': await ingressLatency(env, f, samples) }
      const theirs = await bossLatency(env.databaseUrl, samples)
      for (const [what, latency] of Object.entries(latencies)) {
        for (const p of [0.5, 0.95, 0.99]) {
          const a = percentile(latency, p)
          const b = percentile(theirs, p)
          print(`${what} -> run start p${String(p * 100).padEnd(2)} (vs pg-boss send -> start)  ${a.toFixed(0).padStart(8)} ms     vs ${b.toFixed(0).padStart(8)} ms     ratio ${(a / b).toFixed(2)} (lower is better)`)
        }
      }
      print(`outbox dispatch, backlog of ${BACKLOG} events, 1 worker: ${(await drainRate(env.db)).toFixed(0)} events/s`)
      await seedBacklog(env.db, BACKLOG)
      const loaded = await eventLatency(env, f, samples)
      print(`event -> run start with a ${BACKLOG}-event backlog just written: p50 ${percentile(loaded, 0.5).toFixed(0)} ms, p95 ${percentile(loaded, 0.95).toFixed(0)} ms, p99 ${percentile(loaded, 0.99).toFixed(0)} ms`)
      while (await pendingCount(env.db) > 0) await new Promise(r => setTimeout(r, 50))
    } finally {
      second.kill('SIGCONT')
      await stopWorkers(workers)
    }
  } finally {
    await boss.stop({ graceful: false })
  }
}
