import { randomUUID } from 'node:crypto'
import { appendFileSync, existsSync, readFileSync, rmdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { fork, spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process'
import { Agent, request } from 'node:http'
import { createServer } from 'node:net'
import { LeanClient } from './lean-http.js'
import type { Db } from '../lib/db.js'
import type { AuditKicker, ServiceContext } from '../lib/context.js'
import { wireModules } from '../lib/modules.js'
import { loadConfig } from '../lib/config.js'
import { createLogger } from '../lib/log.js'
import { computePermissions } from '../lib/access/index.js'
import * as counters from '../lib/counters/index.js'

/**
 * The checkout whose service the bench measures: this one, or BENCH_SERVICE_DIR (bench/ab.ts
 * points it at a build of an earlier commit, so both builds meet the same bench code).
 */
const SERVICE_DIR = process.env.BENCH_SERVICE_DIR ?? new URL('..', import.meta.url).pathname

/**
 * Builds the service into dist/ (`npm run build`), once per bench run: every service process the
 * bench starts runs what production runs (Procfile: `node dist/...`), not tsx's transform of the
 * sources, whose keep-names helper runs at each closure's creation.
 */
export function buildService (): void {
  const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: SERVICE_DIR, stdio: 'inherit' })
  if (r.status !== 0) throw new Error(`the build exited ${r.status}`)
}

/**
 * The tool that runs a command under a CFS CPU quota, as Kubernetes enforces a pod's
 * `resources.limits.cpu` (/work/shared/STACK.md "Containers and CPU limits"); needs root.
 */
const CPU_QUOTA = process.env.BENCH_CPU_QUOTA ?? '/work/shared/tools/cpu-quota'

/** Why processes cannot be limited here (the quota tool missing, or not root), or null when they can. */
export function cpuQuotaMissing (): string | null {
  if (!existsSync(CPU_QUOTA)) return `${CPU_QUOTA} not found (BENCH_CPU_QUOTA names it)`
  return process.getuid?.() === 0 ? null : `${CPU_QUOTA} needs root (it makes a cgroup)`
}

/**
 * Node options for every service process a section starts (BENCH_SERVICE_NODE_ARGS, split at
 * spaces), e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`, which node refuses in NODE_OPTIONS.
 */
const SERVICE_NODE_ARGS = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean)

export interface ServiceOptions {
  /** Runs the process as a pod limited to this many thousandths of a core (through CPU_QUOTA). */
  millicores?: number
  /** Node options before the entry point (e.g. `--cpu-prof`). */
  execArgv?: string[]
  /**
   * Runs the process in a memory cgroup of this many MiB, as Kubernetes enforces a pod's
   * `resources.limits.memory`: node sizes its heap by the limit it finds there, and the kernel
   * ends the process if it goes beyond. Needs root.
   */
  memoryMb?: number
}

/**
 * The command line that runs `command` in a memory cgroup of its own (cgroup v1's memory
 * controller, or v2's), and that group's folder, removed once the process is gone.
 */
function memoryLimited (mb: number, command: string[]): { argv: string[], dir: string } {
  const v1 = existsSync('/sys/fs/cgroup/memory/cgroup.procs')
  const dir = path.join(v1 ? '/sys/fs/cgroup/memory' : '/sys/fs/cgroup', `bench-memory-${process.pid}-${randomUUID().slice(0, 8)}`)
  const limit = v1 ? 'memory.limit_in_bytes' : 'memory.max'
  const script = `mkdir "$1" && echo ${mb * 1024 * 1024} > "$1/${limit}" && echo $$ > "$1/cgroup.procs" && shift && exec "$@"`
  return { argv: ['sh', '-c', script, 'memory-limit', dir, ...command], dir }
}

/**
 * Starts a service entry point as production does: `node dist/<entry>.js` (e.g. 'server/main').
 * Under a CPU limit the child is the quota tool, which passes SIGTERM on; signals meant for
 * node itself (SIGSTOP) go to `servicePid`.
 */
export function startService (entry: 'server/main' | 'embedded/main' | 'worker/main' | 'db/setup', env: Record<string, string | undefined>, stdio: StdioOptions = ['ignore', 'inherit', 'inherit'], options: ServiceOptions = {}): ChildProcess {
  let node = [process.execPath, ...SERVICE_NODE_ARGS, ...(options.execArgv ?? []), path.join(SERVICE_DIR, 'dist', `${entry}.js`)]
  let cgroup: string | undefined
  if (options.memoryMb !== undefined) ({ argv: node, dir: cgroup } = memoryLimited(options.memoryMb, node))
  const child = options.millicores === undefined
    ? spawn(node[0], node.slice(1), { env, stdio })
    : spawn(CPU_QUOTA, [String(options.millicores), ...node], { env, stdio })
  if (cgroup !== undefined) child.on('exit', () => { try { rmdirSync(cgroup) } catch { /* a process it left behind holds it */ } })
  return child
}

/** The node process of a service started by startService: the child itself, or the quota tool's child. */
export async function servicePid (child: ChildProcess, options: ServiceOptions = {}): Promise<number> {
  if (options.millicores === undefined) return child.pid!
  for (let i = 0; i < 100; i++) {
    const kids = await readFile(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').catch(() => '')
    if (kids.trim() !== '') return Number(kids.trim().split(' ')[0])
    await new Promise(r => setTimeout(r, 20))
  }
  throw new Error(`${CPU_QUOTA}: no child process after 2 s`)
}

/**
 * Periods of the quota tool's cgroup so far, and those in which it was throttled (its quota used
 * up before the period ended); null without a limit or a readable cgroup (v1 and v2).
 */
export async function throttling (child: ChildProcess): Promise<{ periods: number, throttled: number } | null> {
  for (const dir of [`/sys/fs/cgroup/cpu/cpu-quota-${child.pid}`, `/sys/fs/cgroup/cpu-quota-${child.pid}`]) {
    const text = await readFile(`${dir}/cpu.stat`, 'utf8').catch(() => null)
    if (text === null) continue
    const field = (name: string) => Number(text.match(new RegExp(`^${name} (\\d+)$`, 'm'))?.[1] ?? 0)
    return { periods: field('nr_periods'), throttled: field('nr_throttled') }
  }
  return null
}

/** CPU seconds a process has used so far in user space and in the kernel, from /proc/PID/stat. */
async function cpuSplit (pid: number): Promise<{ user: number, system: number }> {
  const ticks = 100 // USER_HZ
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ')
  return { user: Number(fields[11]) / ticks, system: Number(fields[12]) / ticks }
}

/** CPU seconds (user + system) a process has used so far, from /proc; null once it is gone. */
export async function processCpuSeconds (pid: number): Promise<number | null> {
  try {
    const { user, system } = await cpuSplit(pid)
    return user + system
  } catch { return null }
}

/**
 * What a process has spent so far in the kernel (CPU seconds) and how often it was switched out:
 * waiting (voluntary: for I/O, a lock, the database) and preempted (involuntary: another process
 * took its core); null once it is gone.
 */
export async function processKernel (pid: number): Promise<{ system: number, waits: number, preempted: number } | null> {
  try {
    const { system } = await cpuSplit(pid)
    const status = await readFile(`/proc/${pid}/status`, 'utf8')
    const field = (name: string) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+)$`, 'm'))?.[1] ?? 0)
    return { system, waits: field('voluntary_ctxt_switches'), preempted: field('nonvoluntary_ctxt_switches') }
  } catch { return null }
}

/** The API's /metrics text, within 5 s (prom-client's event-loop delay figures restart at each scrape). */
export const scrape = (baseUrl: string): Promise<string> => fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5000) }).then(r => r.text())

/** A sample's value in Prometheus text (`/metrics`): the first series of `name`, with or without labels; NaN when absent. */
export function gauge (text: string, name: string): number {
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)
}

/**
 * CPU seconds so far of `processes` and of every backend of the bench database (from /proc: the
 * database must run on this machine, else null). Only the bench database's backends: other
 * databases of the same server are other people's work. Less sensitive to a busy machine than
 * rates: CPU per run says what a run costs wherever its time goes.
 */
export async function cpuTimes (db: Db, processes: number[]): Promise<{ workers: number, backends: Map<number, number> } | null> {
  const pids = (await db.raw('SELECT pid FROM pg_stat_activity WHERE datname = current_database()')).rows.map((x: { pid: number }) => x.pid)
  const backends = new Map<number, number>()
  for (const pid of pids) { const t = await processCpuSeconds(pid); if (t !== null) backends.set(pid, t) }
  if (backends.size === 0) return null
  let total = 0
  for (const pid of processes) total += (await processCpuSeconds(pid)) ?? 0
  return { workers: total, backends }
}

/** Database CPU seconds between two cpuTimes readings (a backend that appeared in between counts whole). */
export function backendSeconds (before: { backends: Map<number, number> }, after: { backends: Map<number, number> }): number {
  let database = 0
  for (const [pid, t] of after.backends) database += t - (before.backends.get(pid) ?? 0)
  return database
}

/** A warning line when the server runs without autovacuum: the figures of sections that churn rows drift with each round. */
export async function autovacuumWarning (db: Db): Promise<string | null> {
  const on = (await db.raw("SELECT current_setting('autovacuum') AS v")).rows[0].v === 'on'
  return on ? null : 'bench: autovacuum is off on this server: sections that churn rows vacuum between phases (bench/automation.ts settle), the others drift from round to round (ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf(); before figures worth recording)'
}

/** The machine's CPU ticks so far, all and idle (with iowait), from /proc/stat's first line. */
export async function machineTicks (): Promise<{ total: number, idle: number }> {
  const f = (await readFile('/proc/stat', 'utf8')).split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  return { total: f.reduce((a, b) => a + b, 0), idle: f[3] + f[4] }
}

/**
 * With BENCH_FIGURES_FILE set, every ratio the bench prints is also appended there as a JSON line
 * {label, candidate, baseline, ratio}: bench/ab.ts compares two builds by them.
 */
export function recordFigure (label: string, r: { candidate: number, baseline: number, ratio: number }): void {
  const file = process.env.BENCH_FIGURES_FILE
  if (file !== undefined && file !== '') appendFileSync(file, JSON.stringify({ label: label.trim(), candidate: r.candidate, baseline: r.baseline, ratio: r.ratio }) + '\n')
}

/** Runs `total` calls of `op` with `concurrency` in flight; returns operations per second. */
export async function throughput (total: number, concurrency: number, op: (i: number, client: number) => Promise<void>): Promise<number> {
  let next = 0
  const started = process.hrtime.bigint()
  await Promise.all(Array.from({ length: concurrency }, async (_, client) => {
    for (;;) {
      const i = next++
      if (i >= total) return
      await op(i, client)
    }
  }))
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  return total / seconds
}

/**
 * Runs a side's round and adds this process's CPU for it (user + system, microseconds) to
 * `spent`: the load generator's own cost, pg's driver on a raw side, the HTTP client on the others.
 */
export async function withClientCpu (spent: (us: number) => void, run: () => Promise<number>): Promise<number> {
  const u0 = process.cpuUsage()
  const rate = await run()
  const u = process.cpuUsage(u0)
  spent(u.user + u.system)
  return rate
}

/** The p-quantile (p in 0..1) of samples: the value at rank floor(p * n) of the sorted samples. */
export function percentile (xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]
}

/** The middle value (the upper one of an even count), as every figure of the bench reports. */
export function median (xs: number[]): number {
  return [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]
}

/**
 * Measures a candidate and its baseline in alternating rounds (so drift on a shared machine hits
 * both alike) and reports the median of each. Ratio = candidate / baseline. An optional third
 * side (the core bench's HTTP floor) runs between them in each round. With `warmUp`, every side
 * first runs once untimed: a path's first few thousand requests run partly unoptimized code and
 * compile it, which no long-running server pays.
 */
export async function compare (rounds: number, candidate: () => Promise<number>, baseline: () => Promise<number>, third?: () => Promise<number>, warmUp = false): Promise<{ candidate: number, baseline: number, ratio: number, third?: number }> {
  const c: number[] = []
  const b: number[] = []
  const t: number[] = []
  if (warmUp) {
    await baseline()
    if (third !== undefined) await third()
    await candidate()
  }
  for (let r = 0; r < rounds; r++) {
    b.push(await baseline())
    if (third !== undefined) t.push(await third())
    c.push(await candidate())
  }
  const mc = median(c)
  const mb = median(b)
  return { candidate: mc, baseline: mb, ratio: mc / mb, ...(third !== undefined ? { third: median(t) } : {}) }
}

export function row (label: string, r: { candidate: number, baseline: number, ratio: number }, unit = 'ops/s'): string {
  recordFigure(label, r)
  return `${label.padEnd(44)} ${r.candidate.toFixed(0).padStart(8)} ${unit}  vs ${r.baseline.toFixed(0).padStart(8)} ${unit}  ratio ${r.ratio.toFixed(2)}`
}

export function benchTenant (what: string): string {
  return `bench-${what}-${randomUUID().slice(0, 8)}`
}

/** A lib-level context for an owner of `tenant`, for benches that call lib directly. */
export function benchContext (db: Db, tenant: string, env: Record<string, string> = {}, sequencer: AuditKicker | null = null): ServiceContext {
  return {
    tenantId: tenant, actor: { sub: 'bench', roles: ['owner'] }, scope: null, permissions: computePermissions(['owner'], null),
    requestId: randomUUID(), log: createLogger('bench', 'error'), db,
    config: loadConfig({ DATABASE_URL: 'postgres://unused', AUTH_DISABLED: 'true', LOG_LEVEL: 'error', ...env }),
    jobs: null, sequencer, hooks: wireModules()
  }
}

// The load generator's HTTP client (BENCH_CLIENT). By default the lean one of bench/lean-http.ts,
// whose CPU per call is about pg's for the raw side's; 'node' uses node:http's keep-alive agent
// (several times pg's CPU per call, bench/README.md); 'fetch' (the layers section only) fetch.
export const BENCH_CLIENT: 'lean' | 'node' | 'fetch' = process.env.BENCH_CLIENT === 'node' || process.env.BENCH_CLIENT === 'fetch' ? process.env.BENCH_CLIENT : 'lean'
const agent = new Agent({ keepAlive: true, maxSockets: 32 })
const lean = new Map<string, LeanClient>()

export function http (env: { baseUrl: string }, token: string, method: string, path: string, body?: unknown): Promise<any> {
  return httpText(env, token, method, path, body).then(text => JSON.parse(text))
}

/**
 * The same request, its answer kept as text: what the core bench times on every side, as the raw
 * side receives PostgreSQL's JSON as text (a 100-item page's JSON.parse would be the client's
 * work, on the same two cores, charged to one side only).
 */
export function httpText (env: { baseUrl: string }, token: string, method: string, path: string, body?: unknown): Promise<string> {
  return BENCH_CLIENT === 'node' ? nodeHttpText(env, token, method, path, body) : leanHttpText(env, token, method, path, body)
}

/**
 * A request by the lean client: `headers` are header lines, each ending in CRLF. Resolves with the
 * status and the body's bytes. One pool of 32 connections per origin, unless `pool` names one of
 * its own (up to 1,024 connections): an actor of a load run (a flooding tenant, an open loop)
 * then never waits for another's connections, nor for its own beyond what the API makes it wait.
 */
export function leanRequest (baseUrl: string, method: string, path: string, headers: string, body?: Buffer, pool = ''): Promise<{ status: number, body: Buffer }> {
  const key = `${pool} ${baseUrl}`
  let client = lean.get(key)
  if (client === undefined) lean.set(key, client = new LeanClient(baseUrl, pool === '' ? 32 : 1024))
  return client.request(method, path, headers, body)
}

async function leanHttpText (env: { baseUrl: string }, token: string, method: string, path: string, body?: unknown): Promise<string> {
  const r = await leanRequest(env.baseUrl, method, path, token === '' ? '' : `Authorization: Bearer ${token}\r\n`, body === undefined ? undefined : Buffer.from(JSON.stringify(body)))
  const text = r.body.toString('utf8')
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`)
  return text
}

function nodeHttpText (env: { baseUrl: string }, token: string, method: string, path: string, body?: unknown): Promise<string> {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const req = request(env.baseUrl + path, {
      method,
      agent,
      headers: { Authorization: `Bearer ${token}`, ...(payload !== undefined ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}) }
    }, res => {
      const chunks: Buffer[] = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        if ((res.statusCode ?? 500) >= 300) reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`))
        else resolve(text)
      })
    })
    // A kept-alive socket the server closed while idle (its keep-alive timeout): send again.
    req.on('error', err => (req.reusedSocket && (err as { code?: string }).code === 'ECONNRESET' ? nodeHttpText(env, token, method, path, body).then(resolve, reject) : reject(err)))
    req.end(payload)
  })
}

/** A TCP port free on 127.0.0.1 right now (for the API processes the bench starts). */
export function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    }).on('error', reject)
  })
}

/**
 * Waits until the API at `base` answers /v1/health/ready, up to 90 s: a loaded 2-core machine
 * starts an API slowly, the Citus side's most of all.
 */
export async function waitReady (base: string): Promise<void> {
  for (let i = 0; i < 900; i++) {
    try { if ((await fetch(`${base}/v1/health/ready`)).status === 200) return } catch { /* starting */ }
    await new Promise(r => setTimeout(r, 100))
  }
  throw new Error(`API at ${base} did not become ready within 90 s`)
}

/**
 * What the worker does in production every 5 s (worker/start.ts): fold counter deltas and vacuum
 * them, so a total (a list's, a quota's) stays a sum over a few rows. The bench runs no worker
 * process where one would consume the section's own jobs; without this a tenant's rows only grow.
 * Returns the stop function.
 */
export function workerChores (db: Db): () => void {
  const timer = setInterval(() => { counters.fold(db).then(() => counters.vacuum(db)).catch(() => {}) }, 5000)
  return () => clearInterval(timer)
}

/** Starts the HTTP floor (bench/floor-server.ts) on a free port; resolves once it listens. */
export async function startFloor (databaseUrl: string): Promise<{ baseUrl: string, pid: number, stop: () => void }> {
  const port = await freePort()
  const child = fork(new URL('./floor-server.ts', import.meta.url).pathname, [], {
    execArgv: ['--import', 'tsx'], env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit', 'ipc']
  })
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve())
    child.once('exit', code => reject(new Error(`the HTTP floor exited ${code}`)))
  })
  return { baseUrl: `http://127.0.0.1:${port}`, pid: child.pid ?? 0, stop: () => { child.kill('SIGTERM') } }
}

/** VmRSS (resident now) or VmHWM (the peak since start or since the last reset) of a process, in MB. */
export function memMb (pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m === null ? 0 : Number(m[1]) / 1024
}

/** The 1-minute load average now (the machine is shared: figures are read next to it). */
export function loadAverage (): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ')[0]
}

/**
 * Starts `op(i)` at a fixed arrival rate for `seconds`, whether or not the calls before it have
 * answered (an open loop: a slow answer does not hold back the next arrivals, so a stall shows in
 * the latencies instead of hiding in a lower rate), and resolves once every call has settled.
 * Returns the number of calls started.
 */
export async function openLoop (rate: number, seconds: number, op: (i: number) => Promise<void>): Promise<number> {
  const total = Math.floor(rate * seconds)
  const t0 = performance.now()
  let pending = 0
  let drained = (): void => {}
  const settle = (): void => { if (--pending === 0) drained() }
  for (let i = 0; i < total;) {
    const due = Math.min(total, Math.floor((performance.now() - t0) * rate / 1000) + 1)
    for (; i < due; i++) { pending++; op(i).then(settle, settle) }
    await new Promise(resolve => setTimeout(resolve, Math.max(0, t0 + i * 1000 / rate - performance.now())))
  }
  if (pending > 0) await new Promise<void>(resolve => { drained = resolve })
  return total
}

/**
 * Latencies (ms) and answer statuses per operation of a load run; status 0 is a call that got no
 * answer (refused connection, reset, a client error).
 */
export class OpLog {
  private readonly ops = new Map<string, { ms: number[], starts: number[], statuses: Map<number, number> }>()

  /** Times `call` (which resolves with the answer's status) under `op`; resolves with the status. */
  async time (op: string, call: () => Promise<number>): Promise<number> {
    const t0 = performance.now()
    let status = 0
    try { status = await call() } catch { /* no answer: status 0 */ }
    this.add(op, performance.now() - t0, status, t0)
    return status
  }

  /** One answer of `op`, timed elsewhere; `start` is its performance.now() at the call, if known. */
  add (op: string, ms: number, status: number, start = NaN): void {
    let o = this.ops.get(op)
    if (o === undefined) this.ops.set(op, o = { ms: [], starts: [], statuses: new Map() })
    o.ms.push(ms)
    o.starts.push(start)
    o.statuses.set(status, (o.statuses.get(status) ?? 0) + 1)
  }

  /** The calls of `op` (or of all) as [start (performance.now()), latency ms]. */
  spans (op?: string): Array<[number, number]> {
    return [...this.ops].filter(([name]) => op === undefined || name === op).flatMap(([, o]) => o.ms.map((ms, i): [number, number] => [o.starts[i], ms]))
  }

  names (): string[] { return [...this.ops.keys()] }

  /** The latencies of `op`, or of every operation. */
  latencies (op?: string): number[] {
    return op === undefined ? [...this.ops.values()].flatMap(o => o.ms) : this.ops.get(op)?.ms ?? []
  }

  /** Calls of `op` (or of all) whose status passes `which`. */
  count (which: (status: number) => boolean, op?: string): number {
    let n = 0
    for (const [name, o] of this.ops) if (op === undefined || name === op) for (const [s, k] of o.statuses) if (which(s)) n += k
    return n
  }

  /** `200: 10, 429: 3` for `op`, statuses in order. */
  statusLine (op: string): string {
    return [...(this.ops.get(op)?.statuses ?? new Map<number, number>())].sort((a, b) => a[0] - b[0]).map(([s, k]) => `${s === 0 ? 'no answer' : s}: ${k}`).join(', ')
  }
}

/**
 * Status of a request by the lean client through the connections of `pool` (leanRequest), its
 * body sent as JSON (an object) or as given (a Buffer); `headers` as leanRequest's.
 */
export async function statusOf (pool: string, baseUrl: string, token: string, method: string, path: string, body?: unknown, headers = ''): Promise<number> {
  const bytes = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body))
  return (await leanRequest(baseUrl, method, path, `Authorization: Bearer ${token}\r\n${headers}`, bytes, pool)).status
}

/**
 * A metered window: CPU seconds of the processes (of which `kernel` in the kernel, and their
 * context switches, `waits` voluntary and `preempted` not), of the database's backends, the
 * machine's ticks (all and idle), and the pods' CFS periods (all and throttled).
 */
export interface Usage { processes: number, kernel: number, waits: number, preempted: number, database: number, idle: number, ticks: number, periods: number, throttled: number }

export function addUsage (into: Usage, u: Usage): void {
  for (const k of Object.keys(into) as Array<keyof Usage>) into[k] += u[k]
}

export function noUsage (): Usage {
  return { processes: 0, kernel: 0, waits: 0, preempted: 0, database: 0, idle: 0, ticks: 0, periods: 0, throttled: 0 }
}

/**
 * Starts metering a window: the node processes `pids`, the bench database's backends, the
 * machine, and the cgroups of the pods `limited` (children started with a CPU limit). The
 * returned function ends the window.
 */
export async function meter (db: Db, pids: number[], limited: ChildProcess[] = []): Promise<() => Promise<Usage>> {
  const read = async () => ({ cpu: await cpuTimes(db, pids), kernel: await Promise.all(pids.map(processKernel)), machine: await machineTicks(), cgroups: await Promise.all(limited.map(throttling)) })
  const before = await read()
  return async () => {
    const after = await read()
    const u = noUsage()
    if (before.cpu !== null && after.cpu !== null) { u.processes = after.cpu.workers - before.cpu.workers; u.database = backendSeconds(before.cpu, after.cpu) }
    after.kernel.forEach((k, i) => {
      const b = before.kernel[i]
      if (k !== null && b !== null) { u.kernel += k.system - b.system; u.waits += k.waits - b.waits; u.preempted += k.preempted - b.preempted }
    })
    u.idle = after.machine.idle - before.machine.idle
    u.ticks = after.machine.total - before.machine.total
    after.cgroups.forEach((c, i) => {
      const b = before.cgroups[i]
      if (c !== null && b !== null) { u.periods += c.periods - b.periods; u.throttled += c.throttled - b.throttled }
    })
    return u
  }
}

/** A Markdown table: a head row, its rule and the rows. */
export function markdownTable (head: string[], rows: string[][]): string[] {
  return [head, head.map(() => '---'), ...rows].map(cells => `| ${cells.join(' | ')} |`)
}

/**
 * Waits until TENANT_ALONE_SECONDS (30 s, the API's default) and a second have passed since
 * `othersLastAt` (a Date.now()), the last request of any tenant but the one measured next: the
 * API then lets that tenant use its slots and sends its answers unpaced, so a figure measures the
 * path and not the fairness rules (the fairness section's subject).
 */
export async function untilAlone (othersLastAt: number, say: (line: string) => void): Promise<void> {
  const wait = othersLastAt + 31_000 - Date.now()
  if (wait <= 0) return
  say(`(${Math.ceil(wait / 1000)} s without other tenants' requests, so the next tenant has the API to itself)`)
  await new Promise(resolve => setTimeout(resolve, wait))
}
