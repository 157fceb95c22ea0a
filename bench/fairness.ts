import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { Db } from '../lib/db.js'
import { AREA, insertObjects, seedCity } from './city.js'
import { floodKinds, startFlood, type FloodKind, type Flooder } from './flood.js'
import { OpLog, benchTenant, gauge, http, leanRequest, loadAverage, meter, openLoop, percentile, scrape, statusOf } from './support.js'

// Per-tenant fairness (issue 35 point 1; docs/behaviour.md "Per-tenant fairness"): while one tenant floods
// the most expensive requests a viewer's token can build, another tenant's get, create and list
// keep their quiet p99 within 2x, with no 5xx, and readiness stays 200. The API is the one
// bench/run.ts started, with the default fairness settings (README "Configuration").

export interface FairnessBenchEnv {
  db: Db
  databaseUrl: string
  baseUrl: string
  tokenFor: (tenant: string, roles?: string[]) => string
  apiPid: number
}

const SECONDS = Number(process.env.BENCH_FLOOD_SECONDS ?? 60)
// Each condition's SECONDS in this many phases, alone and flooded in turn: the machine's speed
// drifts over minutes, and both conditions then see the same drift.
const ALTERNATIONS = Number(process.env.BENCH_FLOOD_ALTERNATIONS ?? 3)
// The pause before each phase, either condition.
const LEAD_IN_MS = 3000
// 48 in flight: the tenant's 8 slots and 40 in its queue (64 places), so every 429 is a request
// that waited TENANT_QUEUE_TIMEOUT_MS, not one refused at once in a loop that only burns CPU.
const LOOPS = Number(process.env.BENCH_FLOOD_LOOPS ?? 48)
const OBJECTS = Number(process.env.BENCH_FLOOD_OBJECTS ?? 50_000)
// The quiet tenant's arrivals per second (an open loop), cycling get, create, get, list.
const QUIET_RATE = 80
const QUIET_OPS = ['get', 'create', 'get', 'list'] as const
const SLUG = 'flood'

/** The flooder's type: long text, polygons, and an attribute schema whose check costs what the attributes cost. */
const FLOOD_TYPE = {
  key: 'parcel',
  name: 'Parcel',
  attributeSchema: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      note: { type: 'string', maxLength: 4096 },
      parts: { type: 'array', uniqueItems: true, items: { type: 'object', required: ['a', 'b'], properties: { a: { type: 'integer', minimum: 0 }, b: { type: 'string', pattern: '^[a-z]+[0-9]+$' } } } }
    }
  },
  geometry: { required: false, types: ['Polygon'] }
}

/** The flooding tenant: OBJECTS polygons with 960-character notes, seeded by SQL, and a layer of them with its cache off. */
async function seedFlooder (env: FairnessBenchEnv): Promise<Flooder & { seedMs: number }> {
  const tenant = benchTenant('flood')
  const owner = env.tokenFor(tenant)
  const type = await http(env, owner, 'POST', '/v1/object-types', FLOOD_TYPE)
  await http(env, owner, 'POST', `/v1/object-types/${type.id as string}/publish`, { to: 'published' })
  const t0 = Date.now()
  await insertObjects(env.db, tenant, type.id, OBJECTS, "jsonb_build_object('name', 'parcel ' || i, 'note', repeat(md5(i::text), 30))",
    'ST_Buffer(ST_SetSRID(ST_MakePoint(? + random() * ?, ? + random() * ?), 4326), 0.0004, 8)',
    [AREA.minX, AREA.maxX - AREA.minX, AREA.minY, AREA.maxY - AREA.minY])
  const seedMs = Date.now() - t0
  // Cache off: every tile and export is rendered by the database again.
  await http(env, owner, 'POST', '/v1/layers/definitions', { name: SLUG, slug: SLUG, cacheTtlSeconds: 0, definition: { filters: { typeId: type.id }, fields: ['attributes.name', 'attributes.note'] } })
  return { token: env.tokenFor(tenant, ['viewer']), typeId: type.id, slug: SLUG, objects: OBJECTS, seedMs }
}

/** Each kind once, alone: a refused request (4xx) would flood nothing. 503 is a statement cut by its bound. */
async function preflight (env: FairnessBenchEnv, f: Flooder, kinds: FloodKind[], say: (line: string) => void): Promise<void> {
  for (const k of kinds) {
    const t0 = Date.now()
    const status = await k.call()
    if (status !== 200 && status !== 503) {
      throw new Error(`fairness: the flood's "${k.name}" answered ${status} alone; fix the request before flooding with it`)
    }
    say(`  alone: ${k.name.padEnd(30)} ${status} in ${Date.now() - t0} ms`)
  }
  // A GraphQL answer is 200 even when its resolvers failed: look at why they did.
  const r = await leanRequest(env.baseUrl, 'POST', '/v1/graphql', `Authorization: Bearer ${f.token}\r\n`, Buffer.from(JSON.stringify({ query: '{ q: queryObjects(query: {limit: 1}) { items { id } } }' })))
  if (r.status !== 200 || r.body.includes('"errors"')) throw new Error(`fairness: GraphQL answered ${r.status} ${r.body.toString().slice(0, 300)}`)
}

interface Quiet { token: string, ids: string[], typeId: string }

/** The quiet tenant's calls, each resolving with its status. */
function quietCall (env: FairnessBenchEnv, q: Quiet, op: typeof QUIET_OPS[number], i: number): Promise<number> {
  const send = (method: string, path: string, body?: unknown) => statusOf('quiet', env.baseUrl, q.token, method, path, body)
  if (op === 'get') return send('GET', `/v1/objects/${q.ids[i % q.ids.length]}`)
  if (op === 'list') return send('GET', '/v1/objects?limit=100')
  return send('POST', '/v1/objects', { typeId: q.typeId, attributes: { name: `quiet ${i}`, height: i % 50 }, geometry: { type: 'Point', coordinates: [AREA.minX + (i % 400) / 1000, AREA.minY + (i % 250) / 1000] } })
}

/** The quiet tenant at QUIET_RATE for `seconds`, its latencies in `log`. */
function quietLoad (env: FairnessBenchEnv, q: Quiet, seconds: number, log: OpLog): Promise<number> {
  return openLoop(QUIET_RATE, seconds, async i => {
    const op = QUIET_OPS[i % QUIET_OPS.length]
    await log.time(op, () => quietCall(env, q, op, i))
  })
}

/**
 * What strained the API over a condition's phases, the most seen: requests waiting for a database
 * connection and its event loop's longest delay (its /metrics), and this process's own longest
 * event-loop delay (a timing client that stalls would stretch the latencies it reads).
 */
interface Strain { poolWaiting: number, loopLagMs: number, clientLagMs: number }

/**
 * GET /v1/health/ready every 200 ms and /metrics every 2 s until `done`: readiness statuses (0: no answer
 * within 5 s) in `log`, the most requests waiting for a database connection and the longest
 * event-loop delay (prom-client's, since the scrape before) in `strain`.
 */
async function watch (env: FairnessBenchEnv, done: () => boolean, log: OpLog, strain: Strain): Promise<void> {
  const every = async (ms: number, poll: () => Promise<unknown>): Promise<void> => {
    while (!done()) {
      await poll()
      await new Promise(resolve => setTimeout(resolve, ms))
    }
  }
  // prom-client's longest delay is since its last scrape: read once at the start, so what came
  // before the phase (the preflight, the previous phase, the flood's last answers) is not counted.
  await scrape(env.baseUrl).catch(() => '')
  // Apart, so that a slow scrape does not thin out the readiness polls.
  await Promise.all([
    every(200, () => log.time('ready', async () => (await fetch(`${env.baseUrl}/v1/health/ready`, { signal: AbortSignal.timeout(5000) })).status)),
    // A scrape is ~50 KB of text for the API to make and for this process to read: every 2 s, as
    // a Prometheus would rather every 15 s, so the bench's own reading does not load what it times.
    every(2000, async () => {
      try {
        const text = await scrape(env.baseUrl)
        strain.poolWaiting = Math.max(strain.poolWaiting, gauge(text, 'db_pool_waiting'))
        strain.loopLagMs = Math.max(strain.loopLagMs, gauge(text, 'nodejs_eventloop_lag_max_seconds') * 1000)
      } catch { /* the readiness poll counts a stalled API */ }
    })
  ])
}

/**
 * One condition's phases: the quiet tenant's calls (and each phase's get p99, in turn), the
 * readiness polls, the strain, and the CPU spent over them (seconds) by the API, the flood's
 * process and this one, and by the database.
 */
interface Condition { quiet: OpLog, ready: OpLog, strain: Strain, phaseP99: number[], cpu: { seconds: number, api: number, flood: number, bench: number, database: number, idle: number, ticks: number } }

const condition = (): Condition => ({ quiet: new OpLog(), ready: new OpLog(), strain: { poolWaiting: 0, loopLagMs: 0, clientLagMs: 0 }, phaseP99: [], cpu: { seconds: 0, api: 0, flood: 0, bench: 0, database: 0, idle: 0, ticks: 0 } })

/** A phase: the quiet tenant's load and the readiness poll, with the flood running or not, into `c`. */
async function phase (env: FairnessBenchEnv, q: Quiet, seconds: number, c: Condition, floodPid: number): Promise<void> {
  let done = false
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  const ends = await Promise.all([env.apiPid, floodPid, process.pid].map(pid => meter(env.db, [pid])))
  const t0 = performance.now()
  const watching = watch(env, () => done, c.ready, c.strain)
  const before = c.quiet.latencies('get').length
  await quietLoad(env, q, seconds, c.quiet)
  done = true
  c.phaseP99.push(percentile(c.quiet.latencies('get').slice(before), 0.99))
  const [api, flood, bench] = await Promise.all(ends.map(end => end()))
  c.cpu.seconds += (performance.now() - t0) / 1000
  c.cpu.api += api.processes
  c.cpu.flood += flood.processes
  c.cpu.bench += bench.processes
  c.cpu.database += api.database
  c.cpu.idle += api.idle
  c.cpu.ticks += api.ticks
  await watching
  lag.disable()
  c.strain.clientLagMs = Math.max(c.strain.clientLagMs, lag.max / 1e6)
}

const ms = (v: number) => v < 10 ? v.toFixed(1) : v.toFixed(0)
const non2xx = (s: number) => s < 200 || s >= 300

export async function benchFairness (env: FairnessBenchEnv, say: (line: string) => void): Promise<void> {
  const flooder = await seedFlooder(env)
  const city = await seedCity(env.db, env.databaseUrl, 2000)
  const quietToken = env.tokenFor(city.tenantId)
  const ids = (await env.db.raw('SELECT id FROM objects WHERE tenant_id = ? ORDER BY random() LIMIT 500', [city.tenantId])).rows.map((r: { id: string }) => r.id)
  const q: Quiet = { token: quietToken, ids, typeId: city.typeIds[0] }
  say(`fairness: flooding tenant ${OBJECTS} polygons (33 positions, a 960-character note each) seeded in ${flooder.seedMs} ms; quiet tenant ${city.count} points; ${SECONDS} s per condition`)
  const kinds = floodKinds(env.baseUrl, flooder)
  await preflight(env, flooder, kinds, say)

  // Untimed first: a fresh path compiles over its first calls.
  await quietLoad(env, q, 3, new OpLog())
  const flood = await startFlood({ baseUrl: env.baseUrl, flooder, loops: LOOPS })
  const allFlood = new OpLog()
  const alone = condition()
  const flooded = condition()
  const each = SECONDS / ALTERNATIONS
  say(`  ${ALTERNATIONS} times: the quiet tenant alone at ${QUIET_RATE} requests/s (get, create, get, list) for ${each} s, then the same beside ${LOOPS} loops of the flooder's viewer (a process of its own) for ${each} s; load ${loadAverage()}`)
  let floodSeconds = 0
  let floodLoad = ''
  try {
    for (let round = 0; round < ALTERNATIONS; round++) {
      // Both conditions start 3 s after the last: the flood's aftermath (its last answers, the
      // garbage they left) settles before the quiet tenant is timed alone again.
      await new Promise(resolve => setTimeout(resolve, LEAD_IN_MS))
      await phase(env, q, each, alone, flood.pid)
      const t0 = performance.now()
      flood.resume()
      // The flood first fills the tenant's slots and queue; the quiet tenant is measured after that.
      await new Promise(resolve => setTimeout(resolve, LEAD_IN_MS))
      await phase(env, q, each, flooded, flood.pid)
      floodLoad = loadAverage()
      // Its requests in flight answer (the queued ones after up to TENANT_QUEUE_TIMEOUT_MS) before the next quiet phase.
      for (const [name, took, status] of await flood.pause()) allFlood.add(name, took, status)
      floodSeconds += (performance.now() - t0) / 1000
    }
  } finally { flood.stop() }

  const total = allFlood.latencies().length
  say(`  flooder: ${total} answers in ${floodSeconds.toFixed(0)} s of flooding (${(total / floodSeconds).toFixed(1)}/s; 429 and 503 expected); load at the end of its last phase ${floodLoad}`)
  // BENCH_FLOOD_LOOPS=0 times the quiet tenant against itself: how far the ratio moves with no flood at all.
  for (const k of kinds.filter(k => allFlood.latencies(k.name).length > 0)) say(`    ${k.name.padEnd(30)} p50 ${ms(percentile(allFlood.latencies(k.name), 0.5))} ms; ${allFlood.statusLine(k.name)}`)
  say('')
  say('| quiet tenant | alone p50 (ms) | alone p99 (ms) | flood p50 (ms) | flood p99 (ms) | p99 flood / alone | goal |')
  say('|---|---:|---:|---:|---:|---:|---:|')
  for (const op of ['get', 'create', 'list']) {
    const a = alone.quiet.latencies(op)
    const b = flooded.quiet.latencies(op)
    const ratio = percentile(b, 0.99) / percentile(a, 0.99)
    say(`| ${op} (${a.length} / ${b.length} calls) | ${ms(percentile(a, 0.5))} | ${ms(percentile(a, 0.99))} | ${ms(percentile(b, 0.5))} | ${ms(percentile(b, 0.99))} | ${ratio.toFixed(2)} | <= 2.0${ratio <= 2 ? '' : ' (missed)'} |`)
  }
  const fivexx = flooded.quiet.count(s => s >= 500 || s === 0)
  const notReady = flooded.ready.count(s => s !== 200)
  say(`| quiet tenant 5xx or no answer under flood (other non-2xx) | ${alone.quiet.count(s => s >= 500 || s === 0)} | | ${fivexx} (${flooded.quiet.count(non2xx) - fivexx}) | | | 0${fivexx === 0 ? '' : ' (missed)'} |`)
  say(`| readiness not 200 (of polls) | ${alone.ready.count(s => s !== 200)} of ${alone.ready.latencies().length} | | ${notReady} of ${flooded.ready.latencies().length} | | | 0${notReady === 0 ? '' : ' (missed)'} |`)
  say(`get p99 of each phase in turn (ms): alone ${alone.phaseP99.map(ms).join(', ')}; flood ${flooded.phaseP99.map(ms).join(', ')}`)
  for (const [name, c] of [['alone', alone], ['flood', flooded]] as const) {
    say(`${name}: at most ${c.strain.poolWaiting} requests waiting for a database connection; the API's longest event-loop delay ${c.strain.loopLagMs.toFixed(0)} ms, the bench's ${c.strain.clientLagMs.toFixed(0)} ms`)
    const cores = (v: number) => (v / c.cpu.seconds).toFixed(2)
    say(`${name}: cores in use over the phases: the API ${cores(c.cpu.api)}, the database ${cores(c.cpu.database)}, the flood's process ${cores(c.cpu.flood)}, this process ${cores(c.cpu.bench)}; the machine idle ${(100 * c.cpu.idle / Math.max(1, c.cpu.ticks)).toFixed(0)} %`)
  }
}
