import type { ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Db } from '../lib/db.js'
import { activeJobs, addDelta, type AutomationBenchEnv, drainSeconds, fixture, ingressCalls, pendingCount, roundFinished, settle, startWorkers, statementLines, statementsAvailable, statementsSnapshot, stopWorkers, webhookRule, type Fixture, type Statements } from './automation.js'
import { startReceiver } from '../test/support/automation.js'
import { addUsage, cpuQuotaMissing, markdownTable, median, meter, noUsage, servicePid, type ServiceOptions, type Usage } from './support.js'
import { profileShares } from './cpu-profile.js'
import { benchFleetApi } from './fleet-api.js'

// Workers as pods (issue 36, point 4): each worker under a CPU limit (the quota tool, as
// Kubernetes enforces limits.cpu), the database and the API unconstrained. A backlog of runs is
// written through the API while every worker is stopped (SIGSTOP), then 1, 2 or 4 limited
// workers drain it, in rounds of alternating order; one unconstrained worker drains the same
// backlog beside them. Two workloads: a database effect (object.update) and a webhook effect to a
// receiver in this process answering after BENCH_FLEET_RECEIVER_MS. Then the API (fleet-api.ts).

/** The automation section's environment: its `env` starts the workers and the web processes. */
export type FleetBenchEnv = Omit<AutomationBenchEnv, 'apiPid'>

// Drains long enough that what a pod spends once per drain (woken from SIGSTOP, its first fetches)
// is small beside its runs, on a fast machine too, and runs spread over enough objects that the
// runs four pods hold in flight seldom wait for one another's row lock (docs/performance.md, fleet).
const RUNS = Number(process.env.BENCH_FLEET_RUNS ?? 6000)
const OBJECTS = Number(process.env.BENCH_FLEET_OBJECTS ?? 1024)
const WARM_RUNS = Number(process.env.BENCH_FLEET_WARMUP ?? 200)
// A limit under which four pods and the database work they drive fit the machine's two cores
// beside the API and the bench (issue 36: the resource measured is the pods', not the machine's).
const MILLICORES = Number(process.env.BENCH_FLEET_WORKER_MILLICORES ?? 100)
const COUNTS = (process.env.BENCH_FLEET_WORKERS ?? '1,2,4').split(',').map(Number)
const RECEIVER_MS = Number(process.env.BENCH_FLEET_RECEIVER_MS ?? 50)
const PARTS = new Set((process.env.BENCH_FLEET_PARTS ?? 'idle,database,webhook,api').split(','))
const IDLE_SECONDS = 30
const GOALS = new Map([[2, 1.8], [4, 3.2]])

interface Pod { child: ChildProcess, pid: number }
interface Side { label: string, pods: Pod[], millicores: number | null, rates: number[], usage: Usage, runs: number, windows: Array<[bigint, bigint]>, statements: Statements }

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))

async function startPods (env: FleetBenchEnv['env'], n: number, options: ServiceOptions): Promise<Pod[]> {
  const children = await startWorkers(env, n, options)
  return Promise.all(children.map(async child => ({ child, pid: await servicePid(child, options) })))
}

function signal (pods: Pod[], sig: NodeJS.Signals): void {
  for (const p of pods) process.kill(p.pid, sig)
}

/**
 * Until the workers hold nothing: no job active and no outbox event undelivered (a database
 * effect's object.updated event is dispatched after its run), so a stopped worker holds no job.
 */
async function quiet (db: Db): Promise<void> {
  for (let i = 0; i < 1000 && (await activeJobs(db) > 0 || await pendingCount(db) > 0); i++) await sleep(20)
}

/** `runs` runs through the side's workers, running, until they are all finished and the workers hold nothing. */
async function through (env: FleetBenchEnv, f: Fixture, side: Side, runs: number): Promise<void> {
  signal(side.pods, 'SIGCONT')
  const since = new Date(Date.now() - 1)
  await ingressCalls(env, f, runs)
  await roundFinished(env.db, f, since, runs)
  await quiet(env.db)
  signal(side.pods, 'SIGSTOP')
}

/**
 * One drain: `runs` ingress calls while every worker is stopped, then the side's workers go on
 * until the last run finished. The rate is by the database's clock (first run started to last
 * finished); the usage is metered from the workers' start to the last run seen finished. First a
 * few runs through the side's workers, so that their pools hold as many connections as a busy
 * worker does: a worker stopped for the other sides' drains finds its connections idle for longer
 * than the pool keeps them, and would open new ones (new backends: their start-up is database CPU
 * a running fleet does not spend on every run).
 */
async function drain (env: FleetBenchEnv, f: Fixture, side: Side, runs: number, timed: boolean, statements: boolean): Promise<void> {
  await settle(env.db, ['objects', 'object_versions', 'audit_events'])
  await through(env, f, side, 32 * side.pods.length)
  const since = new Date(Date.now() - 1)
  await ingressCalls(env, f, runs)
  const end = await meter(env.db, side.pods.map(p => p.pid), side.millicores === null ? [] : side.pods.map(p => p.child))
  const before = timed && statements ? await statementsSnapshot(env.db) : null
  const t0 = process.hrtime.bigint()
  signal(side.pods, 'SIGCONT')
  await roundFinished(env.db, f, since, runs)
  const t1 = process.hrtime.bigint()
  const usage = await end()
  const after = before === null ? null : await statementsSnapshot(env.db)
  if (before !== null && after !== null) addDelta(side.statements, before, after)
  await quiet(env.db)
  signal(side.pods, 'SIGSTOP')
  if (!timed) return
  side.rates.push(runs / await drainSeconds(env.db, f, since))
  addUsage(side.usage, usage)
  side.runs += runs
  side.windows.push([t0, t1])
}

function sides (limited: Pod[], unlimited: Pod): Side[] {
  const side = (label: string, pods: Pod[], millicores: number | null): Side => ({ label, pods, millicores, rates: [], usage: noUsage(), runs: 0, windows: [], statements: new Map() })
  return [...COUNTS.map(n => side(`${n} x ${MILLICORES}m`, limited.slice(0, n), MILLICORES)), side('1 unlimited', [unlimited], null)]
}

/**
 * Each side once untimed (warm processes, as a running fleet has), then the rounds, alternating
 * the order. BENCH_STATEMENTS=1 (with pg_stat_statements loaded): the database's statements of
 * each side's timed drains, from the workers' start to the last run finished.
 */
async function measure (env: FleetBenchEnv, f: Fixture, all: Side[]): Promise<void> {
  const statements = process.env.BENCH_STATEMENTS === '1' && await statementsAvailable(env.db)
  for (const side of all) await drain(env, f, side, WARM_RUNS, false, statements)
  for (let r = 0; r < env.rounds; r++) {
    for (const side of r % 2 === 0 ? all : [...all].reverse()) await drain(env, f, side, RUNS, true, statements)
  }
}

function table (all: Side[]): string[] {
  const one = all.find(s => s.millicores !== null && s.pods.length === 1)
  return markdownTable(['workers', 'runs/s', 'vs 1 worker', 'goal', 'runs/s per core', 'worker CPU per run (in the kernel)', 'worker switches per run: waits / preempted', 'database CPU per run', 'machine idle', 'periods throttled'], all.map(s => {
    const rate = median(s.rates)
    const ratio = one === undefined || s.millicores === null ? null : rate / median(one.rates)
    const goal = GOALS.get(s.pods.length)
    const perCore = s.millicores === null ? `${(s.runs / s.usage.processes).toFixed(0)} of CPU used` : `${(rate / (s.millicores * s.pods.length / 1000)).toFixed(0)} of limit`
    const ms = (seconds: number) => `${(seconds / s.runs * 1000).toFixed(2)} ms`
    return [s.label, rate.toFixed(1), ratio?.toFixed(2) ?? '', ratio === null || goal === undefined ? '' : `>= ${goal}${ratio >= goal ? '' : ' (missed)'}`, perCore,
      `${ms(s.usage.processes)} (${ms(s.usage.kernel)})`, `${(s.usage.waits / s.runs).toFixed(1)} / ${(s.usage.preempted / s.runs).toFixed(2)}`, ms(s.usage.database), `${(100 * s.usage.idle / s.usage.ticks).toFixed(0)} %`, s.usage.periods > 0 ? `${(100 * s.usage.throttled / s.usage.periods).toFixed(0)} %` : '']
  }))
}

function report (title: string, all: Side[], print: (line: string) => void): void {
  print(`fleet, ${title}: ${RUNS} runs a drain, medians of ${all[0].rates.length} rounds (rates by round: ${all.map(s => `${s.label} ${s.rates.map(x => x.toFixed(1)).join('/')}`).join('; ')})`)
  for (const line of table(all)) print(line)
  for (const side of all) {
    if (side.statements.size === 0) continue
    print(`  ${side.label}:`)
    for (const line of statementLines(side.statements, side.runs)) print(line)
  }
}

/**
 * Where the unlimited worker's CPU went during its timed webhook drains (BENCH_FLEET_PROFILE=1):
 * each category's share of the profile's samples, of the CPU per run read from /proc.
 */
async function printProfile (dir: string, side: Side, print: (line: string) => void): Promise<void> {
  const perRun = side.usage.processes / side.runs * 1000
  print(`fleet, webhook effect, the unlimited worker's ${perRun.toFixed(2)} ms of CPU a run by where it went (shares of a cpu profile of its timed drains):`)
  for (const p of (await profileShares(dir, side.windows)).slice(0, 15)) print(`  ${(100 * p.share).toFixed(1).padStart(5)} %  ${(p.share * perRun).toFixed(2)} ms  ${p.category}`)
}

export async function benchFleet (env: FleetBenchEnv, print: (line: string) => void): Promise<void> {
  const missing = cpuQuotaMissing()
  if (missing !== null) { print(`fleet: skipped, ${missing}`); return }
  if (PARTS.has('idle')) await benchIdle(env, print)
  if (PARTS.has('database') || PARTS.has('webhook')) await benchWorkers(env, print)
  if (PARTS.has('api')) await benchFleetApi(env, print)
}

/**
 * What a worker with nothing to do costs: its CPU and the database's statements over IDLE_SECONDS,
 * against the same window with the (idle) API alone. Statements from pg_stat_statements when it is
 * loaded, else transactions (pg_stat_database, which backends report up to a second late).
 */
async function benchIdle (env: FleetBenchEnv, print: (line: string) => void): Promise<void> {
  const exact = await statementsAvailable(env.db)
  const count = async (): Promise<number> => {
    if (exact) return [...(await statementsSnapshot(env.db))!.values()].reduce((n, s) => n + s.calls, 0)
    return (await env.db.raw('SELECT (xact_commit + xact_rollback)::float8 AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0].n
  }
  const window = async (pids: number[]): Promise<{ cpu: number, database: number, statements: number }> => {
    const end = await meter(env.db, pids)
    const before = await count()
    await sleep(IDLE_SECONDS * 1000)
    const after = await count()
    const u = await end()
    return { cpu: u.processes / IDLE_SECONDS, database: u.database / IDLE_SECONDS, statements: (after - before) / IDLE_SECONDS }
  }
  const alone = await window([])
  const [pod] = await startPods(env.env, 1, {})
  try {
    await sleep(10_000)
    const idle = await window([pod.pid])
    const what = exact ? 'statements' : 'transactions'
    print(`fleet, an idle worker over ${IDLE_SECONDS} s: ${(idle.cpu * 1000).toFixed(1)} ms of its CPU a second; the database ${(idle.statements - alone.statements).toFixed(1)} ${what} a second and ${((idle.database - alone.database) * 1000).toFixed(1)} ms of CPU a second more than with the idle API alone (${alone.statements.toFixed(1)} ${what} a second)`)
  } finally {
    await stopWorkers([pod.child])
  }
}

async function benchWorkers (env: FleetBenchEnv, print: (line: string) => void): Promise<void> {
  const profileDir = process.env.BENCH_FLEET_PROFILE === '1' ? await mkdtemp(path.join(tmpdir(), 'fleet-profile-')) : null
  const limited = await startPods(env.env, Math.max(...COUNTS), { millicores: MILLICORES })
  const [unlimited] = await startPods(env.env, 1, profileDir === null ? {} : { execArgv: ['--cpu-prof', '--cpu-prof-dir', profileDir] })
  const all = [...limited, unlimited]
  let webhookSides: Side[] = []
  try {
    const f = await fixture(env, OBJECTS)
    await quiet(env.db)
    signal(all, 'SIGSTOP')
    if (PARTS.has('database')) {
      const s = sides(limited, unlimited)
      await measure(env, f, s)
      report('database effect (object.update)', s, print)
    }
    if (PARTS.has('webhook')) {
      const receiver = await startReceiver([{ status: 200, body: '{"ok":true}', delayMs: RECEIVER_MS }])
      try {
        webhookSides = sides(limited, unlimited)
        await measure(env, await webhookRule(env, f, receiver.url), webhookSides)
        report(`webhook effect, receiver answering in ${RECEIVER_MS} ms`, webhookSides, print)
      } finally {
        await receiver.close()
      }
    }
  } finally {
    signal(all, 'SIGCONT')
    await stopWorkers(all.map(p => p.child))
  }
  if (profileDir !== null && webhookSides.length > 0) await printProfile(profileDir, webhookSides[webhookSides.length - 1], print)
  if (profileDir !== null) await rm(profileDir, { recursive: true, force: true })
}
