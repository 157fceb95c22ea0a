import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { chown, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { freePort } from './local.js'
import { waitUntil } from './automation.js'

// What the fault tests (test/faults) share: servers of their own to stop and start (a PostgreSQL
// cluster, a redis-server), a client that writes steadily with every request bounded, and the
// tally of what survived. Everything on loopback, every wait bounded.

const run = promisify(execFile)
const PG_BIN = '/usr/lib/postgresql/15/bin'

/** PostgreSQL refuses to run as root: as root, its commands run as the postgres user. */
function asPostgres (cmd: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]
}

export interface PrivatePostgres {
  /** The URL of database `name` on this server. */
  url: (name: string) => string
  /** pg_ctl stop -m fast: every connection is cut, as in a crash or a failover. */
  stop: () => Promise<void>
  start: () => Promise<void>
  /** Stops the server and deletes its data directory. */
  destroy: () => Promise<void>
}

/**
 * A PostgreSQL 15 cluster of its own on a free port (initdb, as scripts/citus-cluster.sh does),
 * with database `spatial` created: independent of TEST_DATABASE_URL's server, so the test may
 * stop it (and runs the same on a Citus CI run).
 */
export async function privatePostgres (): Promise<PrivatePostgres> {
  const dir = await mkdtemp(path.join(tmpdir(), 'spatial-faults-pg-'))
  if (process.getuid?.() === 0) await chown(dir, ...(await postgresIds()))
  const port = await freePort()
  const pgc = (args: string[]) => run(...asPostgres(`${PG_BIN}/pg_ctl`, ['-D', dir, ...args]), { timeout: 90_000 })
  await run(...asPostgres(`${PG_BIN}/initdb`, ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']), { timeout: 120_000 })
  const conf = [`port = ${port}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${dir}'`,
    'max_connections = 200', 'fsync = off', 'synchronous_commit = off', 'full_page_writes = off']
  await run(...asPostgres('sh', ['-c', `printf '%s\\n' "$@" >> ${dir}/postgresql.conf`, 'sh', ...conf]))
  const start = async () => { await pgc(['-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']) }
  const stop = async () => { await pgc(['-m', 'fast', '-w', '-t', '60', 'stop']) }
  await start()
  const url = (name: string) => `postgres://postgres@127.0.0.1:${port}/${name}`
  const admin = new pg.Client({ connectionString: url('postgres') })
  await admin.connect()
  try { await admin.query('CREATE DATABASE spatial') } finally { await admin.end() }
  return {
    url, stop, start,
    async destroy () {
      await stop().catch(() => {})
      await rm(dir, { recursive: true, force: true })
    }
  }
}

async function postgresIds (): Promise<[number, number]> {
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])])
  return [Number(uid.stdout), Number(gid.stdout)]
}

export interface PrivateRedis {
  url: string
  /** SIGTERM and wait: clients see the connection close and reconnect attempts refused. */
  stop: () => Promise<void>
  /** A fresh, empty redis-server on the same port. */
  start: () => Promise<void>
  /** Every key on the server now. */
  keys: () => Promise<string[]>
}

/** A redis-server of its own on a free port, without persistence. */
export async function privateRedis (): Promise<PrivateRedis> {
  const port = await freePort()
  let child: ChildProcess | null = null
  const start = async () => {
    const c = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    child = c
    await waitUntil(async () => c.exitCode === null && await redisCli(port, 'PING').then(r => r === 'PONG', () => false), 20_000, 'redis-server to answer')
  }
  const stop = async () => {
    const c = child
    child = null
    if (c === null || c.exitCode !== null) return
    c.kill('SIGTERM')
    await once(c, 'exit')
  }
  await start()
  return { url: `redis://127.0.0.1:${port}`, start, stop, keys: async () => (await redisCli(port, 'KEYS', '*')).split('\n').filter(k => k !== '') }
}

async function redisCli (port: number, ...args: string[]): Promise<string> {
  return (await run('redis-cli', ['-p', String(port), ...args], { timeout: 5000 })).stdout.trim()
}

export interface Answer { status: number, ms: number, id?: string, error?: string, at: number }

/**
 * One request bounded by `timeoutMs`: an answer it did not get in time is status 0 with the
 * error, never a hang (the fault tests assert that none took that long).
 */
export async function boundedRequest (url: string, init: RequestInit, timeoutMs: number): Promise<Answer & { body: any }> {
  const t0 = performance.now()
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) })
    const text = await res.text()
    let body: any = text
    try { body = JSON.parse(text) } catch { /* not JSON */ }
    return { status: res.status, ms: performance.now() - t0, body, at: Date.now() }
  } catch (err) {
    const cause = (err as { cause?: { code?: string, message?: string } }).cause
    return { status: 0, ms: performance.now() - t0, error: `${(err as Error).message}${cause ? ` (${cause.code ?? ''} ${cause.message ?? ''})` : ''}`, body: null, at: Date.now() }
  }
}

export interface SteadyWrites {
  answers: Answer[]
  /** Ids of the objects answered 201. */
  accepted: () => string[]
  /** Resolves once at least `n` more writes were answered 201 than when called. */
  acceptedMore: (n: number, ms: number) => Promise<void>
  stop: () => Promise<Answer[]>
}

/**
 * `lanes` clients creating objects of `typeId` one after the other (a pause of `pauseMs` after a
 * failed one), each request bounded by `timeoutMs`.
 */
export function steadyWrites (base: string, token: string, typeId: string, opts: { lanes?: number, timeoutMs: number, pauseMs?: number }): SteadyWrites {
  const answers: Answer[] = []
  let stopped = false
  let n = 0
  const lane = async () => {
    while (!stopped) {
      const a = await boundedRequest(`${base}/v1/objects`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ typeId, attributes: { name: `w${n++}` } })
      }, opts.timeoutMs)
      answers.push({ status: a.status, ms: a.ms, at: a.at, ...(a.status === 201 ? { id: a.body.id } : { error: a.error ?? JSON.stringify(a.body) }) })
      if (a.status !== 201) await new Promise(resolve => setTimeout(resolve, opts.pauseMs ?? 200))
    }
  }
  const lanes = Array.from({ length: opts.lanes ?? 2 }, lane)
  const accepted = () => answers.filter(a => a.status === 201).map(a => a.id!)
  return {
    answers,
    accepted,
    async acceptedMore (count, ms) {
      const target = accepted().length + count
      await waitUntil(() => accepted().length >= target, ms, `${count} more writes answered 201`)
    },
    async stop () {
      stopped = true
      await Promise.all(lanes)
      return answers
    }
  }
}

export interface Tally {
  /** Objects of the tenant, and how many of `accepted` are among them. */
  objects: number
  present: number
  /** Runs of the rule by status. */
  runs: Record<string, number>
  /** Objects the rule's effect changed once, and more than once. */
  appliedOnce: number
  appliedTwice: number
  /** The tenant's outbox events not delivered yet. */
  outboxPending: number
}

/**
 * What the database holds for `tenant` after a fault: which accepted writes are present, how
 * often rule `ruleId` (an object.update on each new object) changed each object, the runs by
 * status, and the outbox events still pending. Every statement filters by tenant.
 */
export async function tally (url: string, tenant: string, ruleId: string, accepted: string[]): Promise<Tally> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    // In this order: an effect commits with its run's outcome, so runs read as final before the
    // objects are read cannot look settled while an effect is still to come.
    const pending = (await c.query('SELECT count(*)::int AS n FROM outbox_events WHERE tenant_id = $1 AND delivered_at IS NULL', [tenant])).rows[0].n
    const runs = (await c.query('SELECT status, count(*)::int AS n FROM automation_runs WHERE tenant_id = $1 AND rule_id = $2 GROUP BY status', [tenant, ruleId])).rows
    const applied = (await c.query(`SELECT o.id, count(v.object_id)::int AS n FROM objects o
      LEFT JOIN object_versions v ON v.tenant_id = o.tenant_id AND v.object_id = o.id AND v.operation = 'updated' AND v.actor->>'sub' = $2
      WHERE o.tenant_id = $1 GROUP BY o.id`, [tenant, `automation:${ruleId}`])).rows as Array<{ id: string, n: number }>
    const ids = new Set(applied.map(r => r.id))
    return {
      objects: applied.length,
      present: accepted.filter(id => ids.has(id)).length,
      runs: Object.fromEntries(runs.map(r => [r.status, r.n])),
      appliedOnce: applied.filter(r => r.n === 1).length,
      appliedTwice: applied.filter(r => r.n > 1).length,
      outboxPending: pending
    }
  } finally {
    await c.end()
  }
}

/**
 * The tally once it holds still (within `ms`): the outbox drained, a run for every object, and
 * none of them queued or running.
 */
export async function settledTally (url: string, tenant: string, ruleId: string, accepted: string[], ms: number): Promise<Tally> {
  return (await waitUntil(async () => {
    const t = await tally(url, tenant, ruleId, accepted)
    const runs = Object.values(t.runs).reduce((a, b) => a + b, 0)
    return t.outboxPending === 0 && runs >= t.objects && (t.runs.queued ?? 0) + (t.runs.running ?? 0) === 0 ? t : null
  }, ms, 'every run to finish and the outbox to drain'))!
}

/** The one line each fault test prints, which the lead collects. */
export function reportFault (fault: string, figures: { injected: number, accepted: number, present: number, runs: number, applied: number, lost: number, duplicated: number }): void {
  const f = figures
  console.log(`faults: ${fault} injected ${f.injected}, writes accepted ${f.accepted} present ${f.present}, runs ${f.runs} applied ${f.applied}, lost ${f.lost}, duplicated ${f.duplicated}`)
}

/** Where `child` still runs as the same process it was started as (it was not restarted). */
export const stillRunning = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null

