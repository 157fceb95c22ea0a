import type { Db } from '../lib/db.js'
import { AREA, insertObjects, seedCity, tileAt } from './city.js'
import { OpLog, benchTenant, http, leanRequest, loadAverage, openLoop, percentile, statusOf } from './support.js'

// Per-tenant fairness (issue 35 point 1; docs/behaviour.md "Platform"): while one tenant floods
// the most expensive requests a viewer's token can build, another tenant's get, create and list
// keep their quiet p99 within 2x, with no 5xx, and readiness stays 200. The API is the one
// bench/run.ts started, with the default fairness settings (README "Configuration").

export interface FairnessBenchEnv {
  db: Db
  databaseUrl: string
  baseUrl: string
  tokenFor: (tenant: string, roles?: string[]) => string
}

const SECONDS = Number(process.env.BENCH_FLOOD_SECONDS ?? 60)
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

/** The most text filters a query may hold (20), none matching: each a LIKE over every row's long note. */
const HEAVY_QUERY = {
  filters: [{ operator: 'or', filters: Array.from({ length: 20 }, (_, i) => ({ field: 'attributes.note', operator: 'contains', value: `zq${i}`.repeat(1000) })) }],
  sorts: [{ field: 'attributes.note', order: 'desc' }],
  aggregations: [{ field: '*', function: 'count' }],
  limit: 1000
}

/** A closed ring of `n` positions around a centre. */
function circle (n: number, [x, y]: [number, number], r: number): number[][] {
  const ring = Array.from({ length: n }, (_, i) => [x + r * Math.cos(2 * Math.PI * i / n), y + r * Math.sin(2 * Math.PI * i / n) * 0.6])
  return [...ring, ring[0]]
}

interface Flooder { tenant: string, token: string, typeId: string }

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
  return { tenant, token: env.tokenFor(tenant, ['viewer']), typeId: type.id, seedMs }
}

interface FloodKind { key: string, name: string, call: () => Promise<number> }

/** The flood's requests, each as heavy as a viewer may make it; every one resolves with its status. */
function floodKinds (env: FairnessBenchEnv, f: Flooder): FloodKind[] {
  const centre: [number, number] = [(AREA.minX + AREA.maxX) / 2, (AREA.minY + AREA.maxY) / 2]
  // Bodies serialized once: the load generator shares the two cores with the API.
  const query = Buffer.from(JSON.stringify(HEAVY_QUERY))
  // 20 root fields (GRAPHQL_MAX_ROOT_FIELDS), each the heavy query: they run at once.
  const graphql = Buffer.from(JSON.stringify({
    query: `query ($q: ObjectQuery) { ${Array.from({ length: 20 }, (_, i) => `q${i}: queryObjects(query: $q) { items { id attributes geometry } pagination { total } }`).join(' ')} }`,
    variables: { q: { ...HEAVY_QUERY, limit: 100 } }
  }))
  // Close to MAX_BODY_BYTES (1 MiB): 30,000 distinct items under uniqueItems and a pattern, and a
  // polygon of 4,000 positions for the PostGIS check.
  const validate = Buffer.from(JSON.stringify({
    attributes: { name: 'x', note: 'y'.repeat(4000), parts: Array.from({ length: 30_000 }, (_, i) => ({ a: i, b: `p${i}` })) },
    geometry: { type: 'Polygon', coordinates: [circle(4000, centre, 0.05)] }
  }))
  let tile = 0
  let page = 0
  const send = (method: string, path: string, body?: Buffer) => statusOf('flood', env.baseUrl, f.token, method, path, body)
  const kinds: FloodKind[] = [
    { key: 'query', name: 'query run, 20 text filters', call: () => send('POST', '/v1/queries/objects/run', query) },
    { key: 'geojson', name: 'GeoJSON page of 10,000', call: () => send('GET', `/v1/layers/objects?layer=${SLUG}&limit=10000&offset=${10_000 * (page++ % Math.max(1, Math.floor(OBJECTS / 10_000)))}`) },
    { key: 'ndjson', name: 'NDJSON whole layer', call: () => streamed(env, f.token, `/v1/layers/objects/stream?layer=${SLUG}`) },
    // Zooms 0 to 8 over the area: each holds every polygon; no cache to hit.
    { key: 'tile', name: 'tile z0-z8, cache off', call: () => send('GET', `/v1/layers/tiles/${SLUG}/${tileAt(tile++ % 9, ...centre).join('/')}.mvt`) },
    { key: 'validate', name: 'validate, ~1 MB body', call: () => send('POST', `/v1/object-types/${f.typeId}/validate`, validate) },
    { key: 'graphql', name: 'GraphQL, 20 heavy root fields', call: () => send('POST', '/v1/graphql', graphql) }
  ]
  // BENCH_FLOOD_KINDS=graphql,validate floods with those alone (to see which one a miss comes from).
  const only = (process.env.BENCH_FLOOD_KINDS ?? '').split(',').map(k => k.trim()).filter(Boolean)
  return only.length === 0 ? kinds : kinds.filter(k => only.includes(k.key))
}

/** An NDJSON export read to its end and dropped (the lean client would hold all of it). */
async function streamed (env: FairnessBenchEnv, token: string, path: string): Promise<number> {
  const r = await fetch(env.baseUrl + path, { headers: { Authorization: `Bearer ${token}` } })
  if (r.body !== null) for await (const _ of r.body) { /* dropped */ }
  return r.status
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

/** What the API's /metrics says of its pool and event loop, the most over a phase. */
interface Strain { poolWaiting: number, loopLagMs: number }

/**
 * GET /v1/health/ready and /metrics every 200 ms until `done`: readiness statuses (0: no answer
 * within 5 s) in `log`, the most requests waiting for a database connection and the longest
 * event-loop delay (prom-client's, since the scrape before) in `strain`.
 */
async function watch (env: FairnessBenchEnv, done: () => boolean, log: OpLog, strain: Strain): Promise<void> {
  const gauge = (text: string, name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? 0)
  const every = async (poll: () => Promise<unknown>): Promise<void> => {
    while (!done()) {
      await poll()
      await new Promise(resolve => setTimeout(resolve, 200))
    }
  }
  // Apart, so that a slow scrape does not thin out the readiness polls.
  await Promise.all([
    every(() => log.time('ready', async () => (await fetch(`${env.baseUrl}/v1/health/ready`, { signal: AbortSignal.timeout(5000) })).status)),
    every(async () => {
      try {
        const text = await (await fetch(`${env.baseUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text()
        strain.poolWaiting = Math.max(strain.poolWaiting, gauge(text, 'db_pool_waiting'))
        strain.loopLagMs = Math.max(strain.loopLagMs, gauge(text, 'nodejs_eventloop_lag_max_seconds') * 1000)
      } catch { /* the readiness poll counts a stalled API */ }
    })
  ])
}

/** A phase: the quiet tenant's load and the readiness poll, with the flood running or not. */
async function phase (env: FairnessBenchEnv, q: Quiet, seconds: number): Promise<{ quiet: OpLog, ready: OpLog, strain: Strain }> {
  const quiet = new OpLog()
  const ready = new OpLog()
  const strain = { poolWaiting: 0, loopLagMs: 0 }
  let done = false
  const watching = watch(env, () => done, ready, strain)
  await quietLoad(env, q, seconds, quiet)
  done = true
  await watching
  return { quiet, ready, strain }
}

const ms = (v: number) => v < 10 ? v.toFixed(1) : v.toFixed(0)
const non2xx = (s: number) => s < 200 || s >= 300

export async function benchFairness (env: FairnessBenchEnv, say: (line: string) => void): Promise<void> {
  const flooder = await seedFlooder(env)
  const city = await seedCity(env.db, env.databaseUrl, 2000)
  const quietToken = env.tokenFor(city.tenantId)
  const ids = (await env.db.raw('SELECT id FROM objects WHERE tenant_id = ? ORDER BY random() LIMIT 500', [city.tenantId])).rows.map((r: { id: string }) => r.id)
  const q: Quiet = { token: quietToken, ids, typeId: city.typeIds[0] }
  say(`fairness: flooding tenant ${OBJECTS} polygons (33 positions, a 960-character note each) seeded in ${flooder.seedMs} ms; quiet tenant ${city.count} points; ${SECONDS} s per phase`)
  const kinds = floodKinds(env, flooder)
  await preflight(env, flooder, kinds, say)

  // Untimed first: a fresh path compiles over its first calls.
  await quietLoad(env, q, 3, new OpLog())
  say(`  quiet phase: the quiet tenant alone at ${QUIET_RATE} requests/s (get, create, get, list); load ${loadAverage()}`)
  const alone = await phase(env, q, SECONDS)

  const flood = new OpLog()
  let stop = false
  let next = 0
  const t0 = performance.now()
  const loops = Promise.all(Array.from({ length: LOOPS }, async () => {
    while (!stop) {
      const k = kinds[next++ % kinds.length]
      await flood.time(k.name, k.call)
    }
  }))
  // The flood first fills the tenant's slots and queue; the quiet tenant is measured after that.
  await new Promise(resolve => setTimeout(resolve, 3000))
  say(`  flood phase: ${LOOPS} loops of the flooder's viewer, the quiet tenant as before; load ${loadAverage()}`)
  const flooded = await phase(env, q, SECONDS)
  stop = true
  const floodLoad = loadAverage()
  await loops
  const floodSeconds = (performance.now() - t0) / 1000

  const total = flood.latencies().length
  say(`  flooder: ${total} answers in ${floodSeconds.toFixed(0)} s (${(total / floodSeconds).toFixed(1)}/s; 429 and 503 expected); load at the end ${floodLoad}`)
  for (const k of kinds) say(`    ${k.name.padEnd(30)} p50 ${ms(percentile(flood.latencies(k.name), 0.5))} ms; ${flood.statusLine(k.name)}`)
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
  for (const [name, p] of [['alone', alone], ['flood', flooded]] as const) {
    say(`API during the ${name} phase: at most ${p.strain.poolWaiting} requests waiting for a database connection; longest event-loop delay ${p.strain.loopLagMs.toFixed(0)} ms`)
  }
}
