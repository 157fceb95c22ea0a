import { randomUUID } from 'node:crypto'
import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks'
import type { ChildProcess } from 'node:child_process'
import { readdirSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import { AREA, seedCity, tileAt } from './city.js'
import { OpLog, gauge, http, loadAverage, memMb, openLoop, percentile, scrape, startFloor, statusOf } from './support.js'
import { fixture, settle, startWorkers, stopWorkers, type AutomationBenchEnv, type Fixture } from './automation.js'

// Soak (issue 35 point 5): a mixed workload (reads, writes, queries, tiles, automation) from
// BENCH_SOAK_TENANTS tenants at 70 % of the capacity measured first, for BENCH_SOAK_SECONDS, with
// the API's and the worker's memory sampled: no upward RSS trend, p99 within 3x p50 per operation,
// no errors. Then the same arrivals at the same rate against the HTTP floor (bench/floor-server.ts:
// the raw statement for each answer behind a minimal HTTP server), whose p99 / p50 is what this
// machine allows at that load. Runs only when BENCH_ONLY names it (bench/README.md).

/**
 * `snapshotDir`: where the API writes a heap snapshot on SIGUSR2 (its --diagnostic-dir);
 * `apiMemoryMb`: the API's memory limit as a pod's, if it runs under one (BENCH_API_MEMORY_MB).
 */
export interface SoakBenchEnv extends AutomationBenchEnv { apiPid: number, snapshotDir: string, apiMemoryMb?: number }

const SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 600)
const CAPACITY_SECONDS = Number(process.env.BENCH_SOAK_CAPACITY_SECONDS ?? 15)
const SHARE = 0.7
// A fixed open-loop rate instead (calls/s), to compare two builds at the same load on a noisy machine.
const RATE = process.env.BENCH_SOAK_RATE === undefined ? undefined : Number(process.env.BENCH_SOAK_RATE)
// The capacity's closed loop: 16 in flight, as the core section's c16 rows.
const CAPACITY_CLIENTS = 16
const SAMPLE_MS = 2000
// The floor's open loop: percentiles settle long before the memory trend does.
const FLOOR_SECONDS = Number(process.env.BENCH_SOAK_FLOOR_SECONDS ?? 120)
const FLOOR_WARM_SECONDS = 15
// Stand-in for autovacuum where the server runs without it (CI's): the churned tables every minute.
// With autovacuum on it is not run: an unthrottled VACUUM of objects and their versions holds a
// core while it runs, a stall of the bench's own making on top of autovacuum's.
const VACUUM_MS = 60_000
// How often the database's maintenance (VACUUM, ANALYZE, by autovacuum or anyone) is looked for
// during the load, to tell which slow calls it overlapped.
const MAINTENANCE_POLL_MS = 100
// The timer that samples the bench's own event-loop delay; a sample holds its interval too.
const LAG_RESOLUTION_MS = 10
// RSS slope over the second half above which memory is said to climb: see bench/README.md "soak".
const SLOPE_GOAL_MB_PER_MIN = 1

// The mix, one cycle of 20 arrivals: get 6, create 3, update 3, tile 3, list 2, query 2, automation 1.
const CYCLE = ['get', 'create', 'get', 'tile', 'update', 'list', 'get', 'query', 'create', 'get',
  'tile', 'update', 'automation', 'get', 'list', 'tile', 'create', 'update', 'get', 'query'] as const
type Op = typeof CYCLE[number]

/** One of the soak's tenants: its city's objects, the versions the soak last saw, those being updated. */
interface Tenant { tenantId: string, token: string, typeId: string, ids: string[], versions: Map<string, number>, busy: Set<string> }
interface World { tenants: Tenant[], automation: Fixture }

// The platform's load comes from many tenants: BENCH_SOAK_TENANTS of them take whole cycles of the
// mix in turn, so that each tenant's share stays under what one tenant is let hold (docs/behaviour.md
// "Per-tenant fairness"); 1 puts the whole load on one tenant, whose heavy lane then refuses some.
const TENANTS = Number(process.env.BENCH_SOAK_TENANTS ?? 4)
const CITY_POINTS = 20_000

/** The soak's tenants, each a city of CITY_POINTS points and a layer of it (cached as by default), and automation's fixture. */
async function world (env: SoakBenchEnv): Promise<World> {
  const tenants: Tenant[] = []
  for (let k = 0; k < TENANTS; k++) {
    const city = await seedCity(env.db, env.databaseUrl, CITY_POINTS, k + 1)
    const token = env.tokenFor(city.tenantId)
    await http(env, token, 'POST', '/v1/layers/definitions', { name: 'soak', slug: 'soak', definition: { fields: ['attributes.name', 'attributes.height'] } })
    const ids = (await env.db.raw('SELECT id FROM objects WHERE tenant_id = ? ORDER BY random() LIMIT 1000', [city.tenantId])).rows.map((r: { id: string }) => r.id)
    tenants.push({ tenantId: city.tenantId, token, typeId: city.typeIds[0], ids, versions: new Map(ids.map((id: string) => [id, 1])), busy: new Set() })
  }
  return { tenants, automation: await fixture(env) }
}

/** The tenant that sends the i-th arrival: whole cycles of the mix, one tenant after another. */
const tenantOf = (w: World, i: number): Tenant => w.tenants[Math.floor(i / CYCLE.length) % w.tenants.length]

/** The soak's k-th place in the city. */
const at = (k: number): [number, number] => [AREA.minX + (k % 397) / 397 * (AREA.maxX - AREA.minX), AREA.minY + (k % 251) / 251 * (AREA.maxY - AREA.minY)]

/** The i-th call of `op`, resolving with its status; `ok` says which statuses are success. */
function call (env: SoakBenchEnv, w: World, op: Op, i: number): Promise<number> {
  const t = tenantOf(w, i)
  const send = (method: string, path: string, body?: unknown, headers?: string) => statusOf('soak', env.baseUrl, t.token, method, path, body, headers)
  switch (op) {
    case 'get': return send('GET', `/v1/objects/${t.ids[(i * 7919) % t.ids.length]}`)
    case 'create': return send('POST', '/v1/objects', { typeId: t.typeId, attributes: { name: `soak ${i}`, height: i % 50 }, geometry: { type: 'Point', coordinates: at(i) } })
    case 'update': return update(t, i, (id, version) => send('PATCH', `/v1/objects/${id}`, { attributes: { name: `updated ${i}`, height: i % 40 } }, `If-Match: "${version}"\r\n`))
    case 'list': return send('GET', '/v1/objects?limit=100&sortBy=createdAt&sortOrder=desc')
    case 'query': {
      const [x, y] = at(i)
      return send('POST', '/v1/queries/objects/run', { filters: [{ field: 'geometry', operator: 'bbox', value: [x, y, x + 0.01, y + 0.006] }], limit: 100 })
    }
    case 'tile': return send('GET', `/v1/layers/tiles/soak/${tileAt(14, ...at(i * 31)).join('/')}.mvt`)
    case 'automation': {
      const a = w.automation
      return statusOf('soak', env.baseUrl, a.webhookToken, 'POST', '/v1/automation/triggers/bench', { id: a.objectIds[i % a.objectIds.length], n: i })
    }
  }
}

/**
 * An update of an object no other call of the soak is changing, at the version the soak last saw
 * (a 409 would be the bench's fault); `write` resolves with the answer's status.
 */
async function update (t: Tenant, i: number, write: (id: string, version: number) => Promise<number>): Promise<number> {
  let id = t.ids[i % t.ids.length]
  for (let k = i; t.busy.has(id); k++) id = t.ids[k % t.ids.length]
  t.busy.add(id)
  try {
    const version = t.versions.get(id) ?? 1
    const status = await write(id, version)
    if (ok(status)) t.versions.set(id, version + 1)
    return status
  } finally {
    t.busy.delete(id)
  }
}

// The floor's writes name this actor, as the API's name the token's subject.
const FLOOR_ACTOR = JSON.stringify({ sub: 'soak', roles: ['owner'] })

/** The i-th arrival of `op` against the HTTP floor: the raw statement for the same answer (bench/raw-sql.ts). */
function floorCall (floor: string, w: World, op: Exclude<Op, 'automation'>, i: number): Promise<number> {
  const get = (name: string, p: unknown[]) => statusOf('floor', floor, '', 'GET', `/${name}?p=${encodeURIComponent(JSON.stringify(p))}`)
  const post = (name: string, p: unknown[]) => statusOf('floor', floor, '', 'POST', `/q/${name}`, p)
  const t = tenantOf(w, i)
  const [x, y] = at(i)
  switch (op) {
    case 'get': return get('q/get', [t.ids[(i * 7919) % t.ids.length], t.tenantId])
    case 'create': return post('create', [randomUUID(), t.tenantId, t.typeId, JSON.stringify({ name: `soak ${i}`, height: i % 50 }), JSON.stringify({ type: 'Point', coordinates: [x, y] }), FLOOR_ACTOR])
    case 'update': return update(t, i, (id, version) => post('update', [id, t.tenantId, version, JSON.stringify({ name: `updated ${i}`, height: i % 40 }), FLOOR_ACTOR]))
    case 'list': return get('q/list-desc', [t.tenantId])
    case 'query': return get('q/bbox', [t.tenantId, x, y, x + 0.01, y + 0.006])
    case 'tile': return get('b/tile-all', [...tileAt(14, ...at(i * 31)), t.tenantId])
  }
}

const ok = (s: number) => s >= 200 && s < 300

/** The mix in a closed loop of CAPACITY_CLIENTS for CAPACITY_SECONDS: calls per second. */
async function capacity (env: SoakBenchEnv, w: World, log: OpLog): Promise<number> {
  let next = 0
  const t0 = performance.now()
  const end = t0 + CAPACITY_SECONDS * 1000
  await Promise.all(Array.from({ length: CAPACITY_CLIENTS }, async () => {
    while (performance.now() < end) {
      const i = next++
      await log.time(CYCLE[i % CYCLE.length], () => call(env, w, CYCLE[i % CYCLE.length], i))
    }
  }))
  return next / ((performance.now() - t0) / 1000)
}

/** Waits (up to `ms`) until no run of the fixture's rule is queued or running; returns how many still are. */
async function runsDrained (env: SoakBenchEnv, a: Fixture, ms: number): Promise<number> {
  const deadline = Date.now() + ms
  for (;;) {
    const r = await env.db.raw("SELECT count(*)::int AS n FROM automation_runs WHERE tenant_id = ? AND rule_id = ? AND status IN ('queued', 'running')", [a.tenant, a.ruleId])
    if (r.rows[0].n === 0 || Date.now() > deadline) return r.rows[0].n
    await new Promise(resolve => setTimeout(resolve, 200))
  }
}

/**
 * The soak's arrivals at `rate` for FLOOR_SECONDS against the HTTP floor, in a process of its own
 * as the API is; the worker has nothing to run meanwhile.
 */
async function floorLoop (env: SoakBenchEnv, w: World, rate: number): Promise<{ log: OpLog, lag: ELDHistogram }> {
  const floor = await startFloor(env.databaseUrl)
  const loop = async (seconds: number, log: OpLog) => await openLoop(rate, seconds, async i => {
    const op = CYCLE[i % CYCLE.length]
    // The automation ingress has no raw statement: its arrivals send nothing.
    if (op !== 'automation') await log.time(op, () => floorCall(floor.baseUrl, w, op, i))
  })
  const log = new OpLog()
  const lag = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS })
  try {
    // Untimed first, as the API's capacity loops were: its connections, plans and compiled code.
    await loop(FLOOR_WARM_SECONDS, new OpLog())
    lag.enable()
    await loop(FLOOR_SECONDS, log)
  } finally { lag.disable(); floor.stop() }
  return { log, lag }
}

/** Least-squares slope of (seconds, MB) samples, in MB per minute. */
function slope (samples: Array<[number, number]>): number {
  const n = samples.length
  const mx = samples.reduce((s, [x]) => s + x, 0) / n
  const my = samples.reduce((s, [, y]) => s + y, 0) / n
  let sxy = 0
  let sxx = 0
  for (const [x, y] of samples) { sxy += (x - mx) * (y - my); sxx += (x - mx) ** 2 }
  return sxx === 0 ? 0 : sxy / sxx * 60
}


/** The API's memory by part (prom-client's process and Node.js gauges), in MB. */
function memoryParts (text: string): Record<string, number> {
  const parts = { rss: 'process_resident_memory_bytes', 'heap used': 'nodejs_heap_size_used_bytes', 'heap total': 'nodejs_heap_size_total_bytes', external: 'nodejs_external_memory_bytes' }
  return Object.fromEntries(Object.entries(parts).map(([k, metric]) => [k, gauge(text, metric) / 1e6]))
}

/**
 * The API's memory by part after a full collection: SIGUSR2 makes it write a heap snapshot, which
 * begins with one. Resolves once the snapshot's file has not grown for a second (it is then
 * deleted), or with null if none was written within two minutes.
 */
async function afterFullCollection (env: SoakBenchEnv): Promise<Record<string, number> | null> {
  const sizes = () => readdirSync(env.snapshotDir).filter(f => f.endsWith('.heapsnapshot')).map(f => statSync(path.join(env.snapshotDir, f)).size)
  process.kill(env.apiPid, 'SIGUSR2')
  let last = -1
  let still = 0
  for (let i = 0; i < 240; i++) {
    await new Promise(resolve => setTimeout(resolve, 500))
    const size = sizes()[0] ?? -1
    still = size > 0 && size === last ? still + 1 : 0
    last = size
    if (still === 2) {
      for (const f of readdirSync(env.snapshotDir)) rmSync(path.join(env.snapshotDir, f), { force: true })
      return memoryParts(await scrape(env.baseUrl))
    }
  }
  return null
}

/** VmRSS of each process every SAMPLE_MS until stopped: [seconds since start, MB]. */
function sampleRss (pids: Record<string, number>): { samples: Record<string, Array<[number, number]>>, stop: () => void } {
  const samples: Record<string, Array<[number, number]>> = Object.fromEntries(Object.keys(pids).map(k => [k, []]))
  const t0 = performance.now()
  const take = (): void => { for (const [k, pid] of Object.entries(pids)) samples[k].push([(performance.now() - t0) / 1000, memMb(pid)]) }
  take()
  const timer = setInterval(take, SAMPLE_MS)
  return { samples, stop: () => { clearInterval(timer); take() } }
}

/**
 * Polls the database every MAINTENANCE_POLL_MS for a VACUUM or ANALYZE in progress (autovacuum's
 * workers, or any session's); `during(start, end)` says whether one ran in that span (performance.now() times).
 */
function watchMaintenance (env: SoakBenchEnv): { during: (start: number, end: number) => boolean, share: () => number, stop: () => Promise<void> } {
  const seen: number[] = [] // poll times (performance.now()) at which maintenance was running
  let polls = 0
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const r = await env.db.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' OR (state = 'active' AND query ~* '^\\s*(vacuum|analyze)')")
      polls++
      if (r.rows[0].n > 0) seen.push(performance.now())
      await new Promise(resolve => setTimeout(resolve, MAINTENANCE_POLL_MS))
    }
  })()
  return {
    during: (start, end) => {
      // The first poll at or after start - one interval: a run seen there overlapped the span.
      let lo = 0
      let hi = seen.length
      while (lo < hi) { const mid = (lo + hi) >> 1; if (seen[mid] < start - MAINTENANCE_POLL_MS) lo = mid + 1; else hi = mid }
      return lo < seen.length && seen[lo] <= end + MAINTENANCE_POLL_MS
    },
    share: () => polls === 0 ? 0 : seen.length / polls,
    stop: async () => { stopped = true; await loop }
  }
}

const ms = (v: number) => v < 10 ? v.toFixed(1) : v.toFixed(0)

export async function benchSoak (env: SoakBenchEnv, say: (line: string) => void): Promise<void> {
  const w = await world(env)
  const workers: ChildProcess[] = await startWorkers(env.env, 1)
  try {
    // Untimed first (fresh paths compile), then the closed loop that gives the capacity.
    await capacity(env, w, new OpLog())
    await runsDrained(env, w.automation, 60_000)
    await settle(env.db, ['objects', 'object_versions'])
    const cap = await capacity(env, w, new OpLog())
    await runsDrained(env, w.automation, 60_000)
    await settle(env.db, ['objects', 'object_versions'])
    const rate = RATE ?? cap * SHARE
    say(`soak: capacity of the mix (get 6, create 3, update 3, tile 3, list 2, query 2, automation ingress 1 in 20), closed loop c${CAPACITY_CLIENTS}, ${CAPACITY_SECONDS} s: ${cap.toFixed(0)} calls/s; load ${loadAverage()}`)
    say(`soak: ${SECONDS} s open loop at ${RATE === undefined ? `${(SHARE * 100).toFixed(0)} % of it` : 'BENCH_SOAK_RATE'}, ${rate.toFixed(0)} calls/s from ${w.tenants.length} tenant(s) of ${CITY_POINTS} points each, whole cycles of the mix in turn; 1 worker process; RSS every ${SAMPLE_MS / 1000} s; the API ${env.apiMemoryMb === undefined ? 'without a memory limit (BENCH_API_MEMORY_MB gives it a pod\'s)' : `as a pod limited to ${env.apiMemoryMb} MiB`}`)

    const log = new OpLog()
    const since = new Date()
    const rss = sampleRss({ API: env.apiPid, worker: workers[0].pid! })
    const memoryBefore = memoryParts(await scrape(env.baseUrl))
    let vacuuming = Promise.resolve()
    const autovacuum = (await env.db.raw("SELECT current_setting('autovacuum') = 'on' AS on")).rows[0].on as boolean
    const vacuum = autovacuum ? undefined : setInterval(() => { vacuuming = vacuuming.then(() => settle(env.db, ['objects', 'object_versions'])).catch(() => {}) }, VACUUM_MS)
    const t0 = performance.now()
    const maintenance = watchMaintenance(env)
    const lag = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS })
    lag.enable()
    try {
      await openLoop(rate, SECONDS, async i => {
        const op = CYCLE[i % CYCLE.length]
        await log.time(op, () => call(env, w, op, i))
      })
    } finally {
      lag.disable()
      clearInterval(vacuum)
      rss.stop()
      await maintenance.stop()
      await vacuuming
    }
    const took = (performance.now() - t0) / 1000
    const afterLoad = await scrape(env.baseUrl)
    const memoryAfter = memoryParts(afterLoad)
    const memoryCollected = await afterFullCollection(env)
    const unfinished = await runsDrained(env, w.automation, 60_000)
    const runs = (await env.db.raw(`SELECT status, count(*)::int AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - queued_at)) * 1000 AS p50,
        percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - queued_at)) * 1000 AS p99
      FROM automation_runs WHERE tenant_id = ? AND rule_id = ? AND queued_at >= ? GROUP BY status`, [w.automation.tenant, w.automation.ruleId, since])).rows as Array<{ status: string, n: number, p50: number | null, p99: number | null }>
    const failedRuns = runs.filter(r => r.status !== 'succeeded').reduce((n, r) => n + r.n, 0)
    const succeeded = runs.find(r => r.status === 'succeeded')
    const { log: floorLog, lag: floorLag } = await floorLoop(env, w, rate)

    const calls = log.latencies().length
    say(`soak: ${calls} calls in ${took.toFixed(0)} s (${(calls / took).toFixed(0)}/s); load at the end ${loadAverage()}`)
    say('')
    say(`soak: the database ran VACUUM or ANALYZE (autovacuum's or another session's) in ${(maintenance.share() * 100).toFixed(0)} % of the load's ${MAINTENANCE_POLL_MS} ms polls${autovacuum ? '' : `; autovacuum is off, so the bench vacuumed the churned tables every ${VACUUM_MS / 1000} s`}`)
    say('')
    say(`| operation | calls | p50 (ms) | p99 (ms) | p99 / p50 | goal | calls clear of VACUUM/ANALYZE: p50 / p99 (ms), p99 / p50 | errors | HTTP floor p50 / p99 (ms), ${FLOOR_SECONDS} s | floor p99 / p50 |`)
    say('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    const line = (name: string, op?: Op, goal = true) => {
      const [xs, fs] = [log.latencies(op), floorLog.latencies(op)]
      const clear = log.spans(op).filter(([start, took]) => !maintenance.during(start, start + took)).map(([, took]) => took)
      const [p50, p99, f50, f99, c50, c99] = [percentile(xs, 0.5), percentile(xs, 0.99), percentile(fs, 0.5), percentile(fs, 0.99), percentile(clear, 0.5), percentile(clear, 0.99)]
      const floor = fs.length === 0 ? '| none (no raw statement) | |' : `| ${ms(f50)} / ${ms(f99)} | ${(f99 / f50).toFixed(1)} |`
      say(`| ${name} | ${xs.length} | ${ms(p50)} | ${ms(p99)} | ${(p99 / p50).toFixed(1)} | ${goal ? `<= 3${p99 <= 3 * p50 ? '' : ' (missed)'}` : ''} | ${clear.length}: ${ms(c50)} / ${ms(c99)}, ${(c99 / c50).toFixed(1)} | ${log.count(s => !ok(s), op)} ${floor}`)
    }
    for (const op of new Set(CYCLE)) line(op, op)
    line('all (mixed operations: not held to the goal)', undefined, false)
    if (succeeded !== undefined) say(`| automation run, queued -> effect committed | ${succeeded.n} | ${ms(succeeded.p50 ?? 0)} | ${ms(succeeded.p99 ?? 0)} | ${((succeeded.p99 ?? 0) / (succeeded.p50 ?? 1)).toFixed(1)} | | | ${failedRuns} failed, ${unfinished} unfinished | | |`)
    if (floorLog.count(s => !ok(s)) > 0) say(`soak: the HTTP floor answered ${floorLog.names().map(op => `${op} ${floorLog.statusLine(op)}`).join('; ')}`)
    say('')
    say(`| process | RSS first (MB) | RSS last (MB) | min / max (MB) | slope over the second half (MB/min) | goal |`)
    say('|---|---:|---:|---:|---:|---:|')
    for (const [name, xs] of Object.entries(rss.samples)) {
      const half = xs.filter(([t]) => t >= took / 2)
      const s = slope(half)
      const mbs = xs.map(([, m]) => m)
      say(`| ${name} | ${mbs[0].toFixed(0)} | ${mbs[mbs.length - 1].toFixed(0)} | ${Math.min(...mbs).toFixed(0)} / ${Math.max(...mbs).toFixed(0)} | ${s.toFixed(2)} (${half.length} samples) | < ${SLOPE_GOAL_MB_PER_MIN}${s < SLOPE_GOAL_MB_PER_MIN ? '' : ' (missed)'} |`)
    }
    // The scrape before the load restarted the histogram: these cover the load alone.
    say(`soak: the API's event-loop delay over the load: p99 ${(gauge(afterLoad, 'nodejs_eventloop_lag_p99_seconds') * 1000).toFixed(0)} ms, max ${(gauge(afterLoad, 'nodejs_eventloop_lag_max_seconds') * 1000).toFixed(0)} ms`)
    // The client's own delays are part of every latency it times, the floor's as much as ours.
    const late = (ns: number) => Math.max(0, ns / 1e6 - LAG_RESOLUTION_MS).toFixed(1)
    const lagLine = (h: ELDHistogram) => `p50 ${late(h.percentile(50))} ms, p99 ${late(h.percentile(99))} ms, max ${late(h.max)} ms`
    say(`soak: this process's (the client's) event-loop delay, beyond its ${LAG_RESOLUTION_MS} ms timer, over the load: ${lagLine(lag)}; over the floor's: ${lagLine(floorLag)}`)
    say(`soak: the API's memory before / after the load (MB): ${Object.keys(memoryBefore).map(k => `${k} ${memoryBefore[k].toFixed(0)} / ${memoryAfter[k].toFixed(0)}`).join(', ')}`)
    say(memoryCollected === null
      ? 'soak: the API wrote no heap snapshot on SIGUSR2: no figure after a full collection'
      : `soak: the API's memory after a full collection (a heap snapshot's, after the load), MB: ${Object.entries(memoryCollected).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`)
    for (const op of new Set(CYCLE)) if (log.count(s => !ok(s), op) > 0) say(`soak: ${op} answered ${log.statusLine(op)}`)
    const errors = log.count(s => !ok(s)) + failedRuns + unfinished
    say(`soak: errors ${errors} (goal 0): calls not 2xx ${log.count(s => !ok(s))}, automation runs failed ${failedRuns}, unfinished a minute after the load ${unfinished}`)
  } finally {
    await stopWorkers(workers)
  }
}
