import { execFile, spawn, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { gunzip, gunzipSync } from 'node:zlib'
import { VectorTile } from '@mapbox/vector-tile'
import { PbfReader } from 'pbf'
import type pg from 'pg'
import type { Db } from '../lib/db.js'
import { joinBytes, queryBytes } from '../lib/fenced/pg.js'
import { BENCH_CLIENT, compare, leanRequest, loadAverage, memMb, row, startFloor, throughput, untilAlone, withClientCpu } from './support.js'
import { TILE_SQL } from './raw-sql.js'
import { insertObjects, seedCity, tileAt } from './city.js'

// Layers (issue 8): tiles cold (cache off) and warm, a GeoJSON bbox page, the NDJSON stream,
// each next to the best direct SQL for the same answer, on 100,000 points of its own tenant.

export interface LayerBenchDeps { db: Db, databaseUrl: string, baseUrl: string, tokenFor: (tenant: string) => string, rounds: number, apiPid: number }

const TENANT = 'bench-layers'
const N = 100_000
// Points over about 0.8 x 0.4 degrees (Berlin): a z10 tile holds some 20,000 of them.
const AREA = { x: 13.0, y: 52.3, w: 0.8, h: 0.4 }

// One token per tenant for the whole run: the client signs once (as a real one does), and the
// API verifies it once (lib/access keeps verified tokens).
const tokens = new Map<string, string>()
function bearer (d: LayerBenchDeps, tenant: string): string {
  let t = tokens.get(tenant)
  if (t === undefined) tokens.set(tenant, t = `Bearer ${d.tokenFor(tenant)}`)
  return t
}

async function apiAs (d: LayerBenchDeps, tenant: string, method: string, path: string, body?: unknown): Promise<any> {
  const r = await fetch(d.baseUrl + path, { method, headers: { Authorization: bearer(d, tenant), 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`)
  return r.json()
}

const api = (d: LayerBenchDeps, method: string, path: string, body?: unknown): Promise<any> => apiAs(d, TENANT, method, path, body)

/** The dataset, seeded once by SQL (bench/city.ts insertObjects). */
async function dataset (d: LayerBenchDeps): Promise<string> {
  const have = await d.db.raw("SELECT type_id::text AS t, count(*)::int AS n FROM objects WHERE tenant_id = ? AND deleted_at IS NULL GROUP BY 1", [TENANT])
  if (have.rows.length === 1 && have.rows[0].n === N) return have.rows[0].t
  const type = await api(d, 'POST', '/v1/object-types', { key: `site_${Date.now()}`, name: 'Site', attributeSchema: { type: 'object' } })
  await api(d, 'POST', `/v1/object-types/${type.id}/publish`, { to: 'published' })
  await insertObjects(d.db, TENANT, type.id, N, "jsonb_build_object('name', 'site ' || i, 'height', i % 97)",
    'ST_SetSRID(ST_MakePoint(? + random() * ?, ? + random() * ?), 4326)', [AREA.x, AREA.w, AREA.y, AREA.h])
  return type.id
}

async function layer (d: LayerBenchDeps, slug: string, typeId: string, ttl: number): Promise<void> {
  try { await api(d, 'DELETE', `/v1/layers/definitions/${slug}`) } catch { /* not there */ }
  await api(d, 'POST', '/v1/layers/definitions', { name: slug, slug, cacheTtlSeconds: ttl, definition: { filters: { typeId }, fields: ['attributes.name', 'attributes.height'] } })
}

/**
 * A tile's features as sorted text (properties and tile coordinates): two tiles that hold the same
 * features in another order (the order of the rows the plan read, which differs between an index
 * scan and a bitmap scan) give the same list.
 */
function decodedFeatures (bytes: Buffer): string[] {
  const out: string[] = []
  for (const layer of Object.values(new VectorTile(new PbfReader(bytes)).layers)) {
    for (let i = 0; i < layer.length; i++) {
      const f = layer.feature(i)
      out.push(JSON.stringify([layer.name, f.type, f.properties, f.loadGeometry()]))
    }
  }
  return out.sort()
}

function sameFeatures (a: Buffer, b: Buffer): boolean {
  const fa = decodedFeatures(a)
  const fb = decodedFeatures(b)
  return fa.length === fb.length && fa.every((f, i) => f === fb[i])
}

function randomTiles (z: number, count: number): Array<[number, number, number]> {
  return Array.from({ length: count }, () => tileAt(z, AREA.x + Math.random() * AREA.w, AREA.y + Math.random() * AREA.h))
}


// Tiles are fetched by the bench's lean keep-alive client (bench/lean-http.ts, as the core paths
// are), whose CPU per request is about what pg's driver costs the direct side. BENCH_CLIENT=node
// fetches with node:http's keep-alive agent, BENCH_CLIENT=fetch with fetch (both heavier per
// request: bench/README.md).
const agent = new Agent({ keepAlive: true, maxSockets: 32 })

// How a warm tile is asked for: 'identity' sends no Accept-Encoding (GDAL-like, and the cold
// tiles' comparison); 'gzip' sends a browser's Accept-Encoding and keeps the gzip body as it
// came (what the network carries); 'gzip-decoded' also gunzips it, as a browser does before
// MapLibre reads it (zlib's async gunzip: off this process's event loop, like a browser's).
type Coding = 'identity' | 'gzip' | 'gzip-decoded'
const BROWSER_ACCEPT_ENCODING = 'gzip, deflate, br, zstd'

function getBytes (d: LayerBenchDeps, path: string, coding: Coding = 'identity', base = d.baseUrl): Promise<Buffer> {
  const headers: Record<string, string> = base === d.baseUrl ? { Authorization: bearer(d, TENANT) } : {}
  if (coding !== 'identity') headers['Accept-Encoding'] = BROWSER_ACCEPT_ENCODING
  if (BENCH_CLIENT === 'lean') {
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
    return leanRequest(base, 'GET', path, lines).then(r => {
      if (r.status !== 200) throw new Error(`${path}: ${r.status}`)
      // Decoded when gzip came (its magic bytes; a vector tile begins with its layers' tag, 0x1a).
      if (coding !== 'gzip-decoded' || r.body[0] !== 0x1f || r.body[1] !== 0x8b) return r.body
      return new Promise<Buffer>((resolve, reject) => gunzip(r.body, (err, out) => err === null ? resolve(out) : reject(err)))
    })
  }
  if (BENCH_CLIENT === 'fetch') {
    // fetch decodes a gzip body itself (and sends its own Accept-Encoding when none is given).
    return fetch(base + path, { headers }).then(async r => {
      if (r.status !== 200) throw new Error(`${path}: ${r.status}`)
      return Buffer.from(await r.arrayBuffer())
    })
  }
  return new Promise((resolve, reject) => {
    request(base + path, { agent, headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        if (res.statusCode !== 200) { reject(new Error(`${path}: ${res.statusCode}`)); return }
        const body = Buffer.concat(chunks)
        if (coding === 'gzip-decoded' && res.headers['content-encoding'] === 'gzip') gunzip(body, (err, out) => err === null ? resolve(out) : reject(err))
        else resolve(body)
      })
      res.on('error', reject)
    }).on('error', reject).end()
  })
}

async function get (d: LayerBenchDeps, path: string, coding: Coding = 'identity', base = d.baseUrl): Promise<void> {
  await getBytes(d, path, coding, base)
}

// Warm tiles are also asked by wrk (a C load generator, when installed: scripts/install.sh), as
// servers are measured: a node:http client that reads (and, for gzip-decoded, gunzips) a large
// tile spends about as much CPU per tile as the API does, on the same two cores, so the Node
// figure says as much about the client as about the API. wrk: one thread, 10 keep-alive
// connections, the same headers; it reads the bodies without decoding them.
const hasWrk = spawnSync('wrk', ['--version']).error === undefined

interface WrkRun { rate: number, requests: number }

function wrk (d: LayerBenchDeps, path: string, coding: 'gzip' | 'identity', seconds: number): Promise<WrkRun> {
  const args = ['-t1', '-c10', `-d${seconds}s`, '-H', `Authorization: ${bearer(d, TENANT)}`]
  if (coding === 'gzip') args.push('-H', `Accept-Encoding: ${BROWSER_ACCEPT_ENCODING}`)
  return new Promise((resolve, reject) => {
    execFile('wrk', [...args, d.baseUrl + path], (err, out) => {
      if (err !== null) { reject(err); return }
      const rate = /Requests\/sec:\s+([\d.]+)/.exec(out)
      const requests = /(\d+) requests in/.exec(out)
      if (rate === null || requests === null || /Non-2xx/.test(out)) { reject(new Error(`wrk ${path}: ${out}`)); return }
      resolve({ rate: Number(rate[1]), requests: Number(requests[1]) })
    })
  })
}

/** CPU time (user + system) a process has used so far, in ms. */
function cpuMs (pid: number): number {
  // /proc/PID/stat: fields 14 and 15 (utime, stime) in clock ticks (100 per second), after the ")" of the name.
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) * 10
}

/** Resets the process's VmHWM to its current RSS (Linux clear_refs 5); false when not allowed. */
function resetPeak (pid: number): boolean {
  try { writeFileSync(`/proc/${pid}/clear_refs`, '5'); return true } catch { return false }
}

/** Streams `path` and counts its lines without keeping them. */
async function countLines (d: LayerBenchDeps, tenant: string, path: string): Promise<number> {
  const r = await fetch(d.baseUrl + path, { headers: { Authorization: bearer(d, tenant) } })
  if (r.status !== 200 || r.body === null) throw new Error(`${path}: ${r.status}`)
  let lines = 0
  for await (const chunk of r.body) for (const b of chunk as Uint8Array) if (b === 10) lines++
  return lines
}

const MILLION = 1_000_000

/**
 * The API process's peak RSS while it streams a million features as NDJSON (over its RSS just
 * before), on the core bench's million-object tenant (bench/city.ts, seeded by COPY).
 */
async function millionStream (d: LayerBenchDeps, say: (line: string) => void): Promise<string[]> {
  const layersLastAt = Date.now()
  const city = await seedCity(d.db, d.databaseUrl, MILLION, 2)
  await untilAlone(layersLastAt, say)
  const seeded = city.seedMs / 1000
  await apiAs(d, city.tenantId, 'POST', '/v1/layers/definitions', { name: 'million', slug: 'million', cacheTtlSeconds: 0, definition: { fields: ['attributes.name', 'attributes.height'] } })
  const idle = memMb(d.apiPid)
  const hwm = resetPeak(d.apiPid)
  let peak = idle
  const sampler = setInterval(() => { peak = Math.max(peak, memMb(d.apiPid)) }, 10)
  const s0 = Date.now()
  const lines = await countLines(d, city.tenantId, '/v1/layers/objects/stream?layer=million')
  const secs = (Date.now() - s0) / 1000
  clearInterval(sampler)
  if (hwm) peak = Math.max(peak, memMb(d.apiPid, 'VmHWM'))
  if (lines !== MILLION) throw new Error(`the million stream gave ${lines} lines`)
  return [
    `NDJSON 1M features (seeded in ${seeded.toFixed(0)} s): ${secs.toFixed(1)} s, ${(MILLION / secs).toFixed(0)} features/s`,
    `NDJSON 1M API RSS: before ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB${hwm ? ' (VmHWM)' : ' (sampled)'}: +${(peak - idle).toFixed(0)} MB  (goal < +150)`
  ]
}

/** COPY of the stream's rows to psql's stdout (discarded): the floor for NDJSON. */
function copyOut (databaseUrl: string, sql: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('psql', [databaseUrl, '-qAtc', `COPY (${sql}) TO STDOUT`], { stdio: ['ignore', 'ignore', 'inherit'] })
    p.on('exit', code => code === 0 ? resolve() : reject(new Error(`psql exited ${code}`)))
  })
}

/** Prints each figure as soon as it is measured. BENCH_LAYERS_MILLION=0 skips the 1M stream (its seeding takes minutes). */
export async function benchLayers (d: LayerBenchDeps, log: (line: string) => void): Promise<void> {
  // The sections before this one used other tenants: beside them this one's heavy answers would
  // be paced and held to the lane.
  const othersLastAt = Date.now()
  const typeId = await dataset(d)
  await layer(d, 'cold', typeId, 0)
  await layer(d, 'warm', typeId, 3600)
  await untilAlone(othersLastAt, log)
  const out = { push: (...lines: string[]) => { for (const l of lines) log(l) } }
  out.push(`layers: ${N} points; tiles cold (cache off) at c1, warm at c10 (cache hit); client ${BENCH_CLIENT}`)
  // Beside the direct statement, the HTTP floor (bench/floor-server.ts): the same statement read the
  // same way behind a bare node:http server of its own process (no authentication, no plan, no
  // cache key, no metrics): floor/direct is what one more HTTP hop costs here, ours/floor the share
  // of that the API gets.
  const floor = await startFloor(d.databaseUrl)
  const conn: pg.Client = await d.db.client.acquireConnection()
  try {
    await conn.query('SET max_parallel_workers_per_gather = 0')
    // Rounds of a second or more on every side: in a shorter round one hiccup moves the rate
    // noticeably.
    for (const [z, count] of [[10, 12], [12, 150], [14, 1000]] as const) {
      const tiles = randomTiles(z, count)
      // The API answers what the direct statement answers: the same features with the same
      // properties (their order in the tile is the order the plan read the rows in).
      const direct = (t: readonly number[]): Promise<Buffer[]> => queryBytes(conn, 'bench.layers.tile', TILE_SQL, [...t, TENANT, typeId])
      const floorPath = (t: readonly number[]) => `/b/tile?p=${encodeURIComponent(JSON.stringify([...t, TENANT, typeId]))}`
      for (const t of tiles.slice(0, 3)) {
        const want = joinBytes(await direct(t))
        if (!sameFeatures(await getBytes(d, `/v1/layers/tiles/cold/${t.join('/')}.mvt`), want)) throw new Error(`tile z${z} ${t.join('/')}: the API's features differ from the direct statement's`)
        if (!sameFeatures(await getBytes(d, floorPath(t), 'identity', floor.baseUrl), want)) throw new Error(`tile z${z} ${t.join('/')}: the floor's features differ from the direct statement's`)
      }
      // The i-th tile asked of each side.
      const ask = {
        ours: (i: number) => get(d, `/v1/layers/tiles/cold/${tiles[i].join('/')}.mvt`),
        direct: async (i: number) => { await direct(tiles[i]) },
        floor: (i: number) => get(d, floorPath(tiles[i]), 'identity', floor.baseUrl)
      }
      // Every side first runs one round untimed (compare's warm-up, outside the CPU counters
      // below): the API's tile path is otherwise still being optimized by V8 in the first timed
      // round of a zoom, which no long-running server pays, and the round that comes first would
      // read the tiles' pages from disk for the others.
      for (const one of [ask.ours, ask.direct, ask.floor]) await throughput(count, 1, one)
      let oursMs = 0
      let floorMs = 0
      // The load generator's CPU per tile on each side (this process: pg's driver for the direct
      // statement, the HTTP client for the others), over its rounds.
      const client = { ours: 0, direct: 0, floor: 0 }
      const timed = (side: keyof typeof client, run: () => Promise<number>): Promise<number> => withClientCpu(us => { client[side] += us }, run)
      const r = await compare(d.rounds,
        () => timed('ours', async () => {
          const c0 = cpuMs(d.apiPid)
          const rate = await throughput(count, 1, ask.ours)
          oursMs += cpuMs(d.apiPid) - c0
          return rate
        }),
        () => timed('direct', () => throughput(count, 1, ask.direct)),
        () => timed('floor', async () => {
          const c0 = cpuMs(floor.pid)
          const rate = await throughput(count, 1, ask.floor)
          floorMs += cpuMs(floor.pid) - c0
          return rate
        }))
      out.push(row(`tile z${z} cold: API vs direct SQL, c1`, r, 'tiles/s') + `  (same features; goal ratio >= 0.77; load ${loadAverage()})`)
      const perTile = (ms: number) => (ms * 1000 / (count * d.rounds)).toFixed(0)
      out.push(`  HTTP floor ${r.third?.toFixed(0)} tiles/s: floor/direct ${((r.third ?? 0) / r.baseline).toFixed(2)}, ours/floor ${(r.candidate / (r.third ?? 1)).toFixed(2)}`)
      out.push(`  CPU per cold tile (the database's work not included): API ${perTile(oursMs)} us, floor ${perTile(floorMs)} us`)
      const perCall = (us: number) => (us / (count * d.rounds)).toFixed(0)
      out.push(`  load generator CPU per tile: direct ${perCall(client.direct)} us, floor ${perCall(client.floor)} us, ours ${perCall(client.ours)} us`)
    }
  } finally {
    await d.db.client.releaseConnection(conn)
    floor.stop()
  }
  for (const z of [12, 14]) {
    const hot = `/v1/layers/tiles/warm/${tileAt(z, AREA.x + AREA.w / 2, AREA.y + AREA.h / 2).join('/')}`
    const identity = await getBytes(d, hot)
    const gz = await getBytes(d, hot, 'gzip')
    if (!gunzipSync(gz).equals(identity)) throw new Error(`tile z${z}: the gzip answer does not decode to the identity answer`)
    out.push(`tile z${z} warm: ${(identity.length / 1024).toFixed(1)} KB identity, ${(gz.length / 1024).toFixed(1)} KB gzip`)
    for (const coding of ['gzip', 'gzip-decoded', 'identity'] as const) {
      // Each coding warmed alike first (the order of the runs otherwise favours the later ones).
      await throughput(300, 10, () => get(d, hot, coding))
      const cpu0 = cpuMs(d.apiPid)
      const client0 = process.cpuUsage()
      const warm = await throughput(2000, 10, () => get(d, hot, coding))
      const perHit = (cpuMs(d.apiPid) - cpu0) * 1000 / 2000
      const c = process.cpuUsage(client0)
      out.push(`tile z${z} warm (cache hit) c10, ${coding}`.padEnd(44) + ` ${warm.toFixed(0).padStart(8)} tiles/s  (goal >= 5000)`)
      // What a shared machine cannot blur: the API's own CPU per hit, and the rate one core allows.
      out.push(`  API CPU per warm hit: ${perHit.toFixed(0)} us (one core: ${(1e6 / perHit).toFixed(0)} tiles/s); client CPU ${((c.user + c.system) / 2000).toFixed(0)} us; load ${loadAverage()}`)
    }
    if (!hasWrk) { out.push('  (wrk not installed: no wrk figures; scripts/install.sh installs it)'); continue }
    for (const coding of ['gzip', 'identity'] as const) {
      await wrk(d, hot, coding, 1)
      const cpu0 = cpuMs(d.apiPid)
      const w = await wrk(d, hot, coding, 4)
      const perHit = (cpuMs(d.apiPid) - cpu0) * 1000 / w.requests
      out.push(`tile z${z} warm (cache hit) c10, ${coding}, wrk`.padEnd(44) + ` ${w.rate.toFixed(0).padStart(8)} tiles/s  (goal >= 5000)`)
      out.push(`  API CPU per warm hit: ${perHit.toFixed(0)} us (one core: ${(1e6 / perHit).toFixed(0)} tiles/s); load ${loadAverage()}`)
    }
  }

  const bbox = [AREA.x, AREA.y, AREA.x + AREA.w / 4, AREA.y + AREA.h / 4]
  const pageSql = `SELECT coalesce(json_agg(p.f ORDER BY p.n), '[]'::json)::text AS features FROM (
      SELECT json_build_object('type', 'Feature', 'id', o.id, 'geometry', ST_AsGeoJSON(o.geom)::json, 'properties',
        json_build_object('attributes', jsonb_build_object('name', o.attributes #> '{name}', 'height', o.attributes #> '{height}'))) AS f,
        row_number() OVER (ORDER BY o.created_at, o.id) AS n
      FROM objects o WHERE o.tenant_id = ? AND o.deleted_at IS NULL AND o.type_id = ? AND o.geom && ST_MakeEnvelope(?, ?, ?, ?, 4326)
        AND ST_Intersects(o.geom, ST_MakeEnvelope(?, ?, ?, ?, 4326))
      ORDER BY o.created_at, o.id LIMIT 1000) p`
  // One at a time: a tenant's pages that miss the render cache take its heavy lane, one slot by
  // default (TENANT_MAX_CONCURRENT_HEAVY_REQUESTS); more clients of one tenant would only queue.
  const g = await compare(d.rounds,
    () => throughput(40, 1, () => get(d, `/v1/layers/objects?layer=cold&bbox=${bbox.join(',')}&limit=1000`)),
    () => throughput(40, 1, async () => { await d.db.raw(pageSql, [TENANT, typeId, ...bbox, ...bbox]) }))
  out.push(row('GeoJSON bbox page of 1000, c1: API vs SQL', g, 'pages/s'))

  const copySql = `SELECT json_build_object('type', 'Feature', 'id', o.id, 'geometry', ST_AsGeoJSON(o.geom)::json, 'properties',
    json_build_object('attributes', jsonb_build_object('name', o.attributes #> '{name}', 'height', o.attributes #> '{height}')))::text
    FROM objects o WHERE o.tenant_id = '${TENANT}' AND o.deleted_at IS NULL AND o.type_id = '${typeId}'`
  const s = await compare(d.rounds,
    async () => { const t0 = Date.now(); await get(d, '/v1/layers/objects/stream?layer=cold'); return N / ((Date.now() - t0) / 1000) },
    async () => { const t0 = Date.now(); await copyOut(d.databaseUrl, copySql); return N / ((Date.now() - t0) / 1000) })
  out.push(row('NDJSON stream vs COPY of the same rows', s, 'features/s'))
  if (process.env.BENCH_LAYERS_MILLION !== '0') out.push(...await millionStream(d, log))
}
