import http from 'node:http'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { after } from 'node:test'
import { PgBoss } from 'pg-boss'
import { createDb } from '../../lib/db.js'
import { recordRelease, packageVersion } from '../../lib/release/index.js'
import { migrateLatest } from '../../db/knex.js'
import { createQueues } from '../../lib/queues/index.js'
import { TEST_DATABASE_URL, TEST_JWT_SECRET } from './env.js'
import { adminQuery, freePort } from './local.js'
import type { Client } from './harness.js'

// What the automation tests share: real worker processes on the test database, and a local
// HTTP receiver on 127.0.0.1 standing in for the outside world.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface WorkerProcess {
  child: ChildProcess
  output: () => string
  /** SIGTERM and wait for the exit. */
  stop: () => Promise<void>
}

/** Every automation test worker runs with these (a private receiver on 127.0.0.1 is allowed). */
export const WORKER_ENV = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_TIMEOUT_SECONDS: '2',
  WORKER_SUPERVISE_SECONDS: '2',
  LOG_LEVEL: 'info'
}

/** An empty database of its own (nothing migrated), dropped by `drop`. */
export async function emptyDatabase (): Promise<{ url: string, drop: () => Promise<void> }> {
  const name = `spatial_test_automation_e2e_${randomBytes(4).toString('hex')}`
  const url = Object.assign(new URL(TEST_DATABASE_URL), { pathname: `/${name}` }).toString()
  await adminQuery(`CREATE DATABASE "${name}"`)
  return { url, drop: () => adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) }
}

/**
 * A database of its own, migrated, with pg-boss's schema and queues and the release recorded (the
 * release job without its demo tenant). Worker processes claim every tenant's outbox events and
 * jobs, so tests that run them must not share the test database with tests that drain the outbox themselves.
 */
export async function scratchDatabase (): Promise<{ url: string, drop: () => Promise<void> }> {
  const database = await emptyDatabase()
  const db = createDb(database.url, { poolMax: 2 })
  try {
    await migrateLatest(db)
    await recordRelease(db, packageVersion())
  } finally {
    await db.destroy()
  }
  const boss = new PgBoss({ connectionString: database.url, schema: 'pgboss', supervise: false, schedule: false })
  boss.on('error', () => {})
  await boss.start()
  await createQueues(boss)
  await boss.stop({ graceful: false })
  return database
}

/** The release job as the Procfile runs it (db/setup.ts) on `url`; resolves with its output once it exited 0. */
export async function runReleaseJob (url: string): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'db/setup.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: url, AUTH_JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout!.on('data', d => { out += String(d) })
  child.stderr!.on('data', d => { out += String(d) })
  const [code] = await once(child, 'exit')
  if (code !== 0) throw new Error(`the release job exited with ${code}: ${out}`)
  return out
}

const running = new Set<WorkerProcess>()

/** Stops every worker and API process this process started (an after() hook: none may outlive its test file). */
export async function stopAllWorkers (): Promise<void> {
  await Promise.all([...running].map(w => w.stop()))
}

export async function startWorker (env: Record<string, string> = {}): Promise<WorkerProcess> {
  return startChild('worker/main.ts', env, /worker started/)
}

/** The API process (server/main.ts) on a free port; `base` is its address. */
export async function startApi (env: Record<string, string> = {}): Promise<WorkerProcess & { base: string }> {
  const port = await freePort()
  const api = await startChild('server/main.ts', { RATE_LIMIT_LIMIT: '1000000', PORT: String(port), ...env }, /api listening/)
  return { ...api, base: `http://127.0.0.1:${port}` }
}

/** A process of ours (`entry`) on the test database, resolved once its output matches `started`. */
async function startChild (entry: string, env: Record<string, string>, started: RegExp): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: TEST_DATABASE_URL, AUTH_JWT_SECRET: TEST_JWT_SECRET, ...WORKER_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout!.on('data', d => { out += String(d) })
  child.stderr!.on('data', d => { out += String(d) })
  const exit = once(child, 'exit')
  const w: WorkerProcess = {
    child,
    output: () => out,
    async stop () {
      running.delete(w)
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      await exit
      clearTimeout(timer)
    }
  }
  running.add(w)
  try {
    await waitUntil(() => started.test(out) || child.exitCode !== null, 120_000, `${entry} start`)
  } catch (err) {
    await w.stop()
    throw new Error(`${(err as Error).message}; output:\n${out.slice(-3000)}`)
  }
  if (child.exitCode !== null) throw new Error(`${entry} exited: ${out}`)
  return w
}

/** Polls `check` until it holds (every 50 ms); fails after `ms` naming `what`. */
export async function waitUntil<T> (check: () => T | Promise<T>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise(r => setTimeout(r, 50))
  }
}

export interface Received {
  method: string, url: string, headers: http.IncomingHttpHeaders, body: Buffer, at: number
  /** The status it was answered with (none for a hang or a reset). */
  status?: number
}
/**
 * An answer: a status and body, after `delayMs` when given (a receiver that takes its time);
 * `flood`: that status, then a body without end (until the caller hangs up); 'hang': none until
 * the receiver closes; 'reset': the connection cut (TCP RST).
 */
export type Reply = { status: number, body?: string, headers?: Record<string, string>, delayMs?: number, flood?: true } | 'hang' | 'reset'

export interface Receiver {
  url: string
  received: Received[]
  /** How the next requests are answered, in order; the last answer repeats. */
  replies: Reply[]
  close: () => Promise<void>
}

export async function startReceiver (replies: Reply[] = [{ status: 200, body: '{"ok":true}' }]): Promise<Receiver> {
  const received: Received[] = []
  const hanging: http.ServerResponse[] = []
  const r: Receiver = { url: '', received, replies, close: async () => {} }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      const got: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: Date.now() }
      received.push(got)
      const reply = r.replies.length > 1 ? r.replies.shift()! : r.replies[0]
      if (reply === 'hang') { hanging.push(res); return }
      if (reply === 'reset') { req.socket.resetAndDestroy(); return }
      const answer = () => {
        got.status = reply.status
        res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) })
        if (reply.flood === true) { flood(res); return }
        res.end(reply.body ?? '')
      }
      if (reply.delayMs === undefined) answer()
      else setTimeout(answer, reply.delayMs)
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  r.close = async () => {
    for (const h of hanging) h.destroy()
    server.closeAllConnections()
    await new Promise<void>(resolve => server.close(() => resolve()))
  }
  return r
}

/** Writes to `res` for as long as the other side reads, then stops (its hang-up ends it). */
function flood (res: http.ServerResponse): void {
  const chunk = Buffer.alloc(64 * 1024, 'x')
  let open = true
  const pump = () => { while (open && res.write(chunk)) { /* until the socket's buffer is full */ } }
  res.on('drain', pump)
  res.on('close', () => { open = false })
  res.on('error', () => { open = false })
  pump()
}

/**
 * For one describe block: a function that starts a receiver answering `replies` in order (the last
 * repeats; none: 200 {"ok":true}), each closed by an after hook when the block ends.
 */
export function useReceivers (): (...replies: Reply[]) => Promise<Receiver> {
  const open: Receiver[] = []
  after(async () => { for (const r of open) await r.close() })
  return async (...replies) => {
    const r = await startReceiver(replies.length > 0 ? replies : undefined)
    open.push(r)
    return r
  }
}

/** Creates a rule (`name` defaults) and publishes it active; returns the create answer (webhookToken, signingSecret once). */
export async function activeRule (c: Client, body: Record<string, unknown>): Promise<Record<string, any>> {
  const r = await c.post('/v1/automation/rules', { name: 'rule', ...body })
  if (r.status !== 201) throw new Error(`create rule: ${r.status} ${r.text}`)
  const p = await c.post(`/v1/automation/rules/${r.body.id}/publish`, { to: 'active' })
  if (p.status !== 200) throw new Error(`publish rule: ${p.status} ${p.text}`)
  return r.body
}

/** The run's detail once it is neither queued nor running (within `ms`). */
export async function finishedRun (c: Client, ruleId: string, runId: string, ms = 60_000): Promise<Record<string, any>> {
  return waitUntil(async () => {
    const r = await c.get(`/v1/automation/rules/${ruleId}/runs/${runId}`)
    return r.status === 200 && !['queued', 'running'].includes(r.body.status) ? r.body : null
  }, ms, `run ${runId} to finish`)
}
