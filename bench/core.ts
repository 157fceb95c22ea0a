import { randomUUID } from 'node:crypto'
import pg from 'pg'
import type { Db } from '../lib/db.js'
import * as audit from '../lib/audit/index.js'
import { AREA, seedCity, type City } from './city.js'
import { compare, http, httpText, median, recordFigure, startFloor, throughput, untilAlone, withClientCpu, workerChores } from './support.js'
import { BBOX_SQL, DWITHIN_SQL, FLOOR_STATEMENTS, rawList, rawSpatial } from './raw-sql.js'

// The core paths over HTTP against the physical limit: the best raw SQL for the same answer
// (the same rows written; the response JSON assembled by PostgreSQL, returned as text), through
// the same driver (pg) with the same concurrency, in alternating rounds of the same run, after
// one untimed round of every side (each process warmed up, as in production). Beside
// them, the HTTP floor: the same raw SQL behind a minimal node:http server of its own process
// (bench/floor-server.ts), the most any HTTP service could get here; ours/floor is the share of
// it the API gets.

export interface CoreBenchEnv {
  db: Db
  databaseUrl: string
  baseUrl: string
  tokenFor: (tenant: string) => string
  rounds: number
}

export interface Figure {
  path: string
  raw: number
  ours: number
  ratio: number
  goal: number | null
  /** The same raw SQL behind the minimal HTTP server (ops/s), where measured. */
  floor?: number
}

const attrs = (i: number) => ({ name: `new ${i}`, height: i % 50 })
const point = (i: number) => ({ type: 'Point', coordinates: [AREA.minX + (i % 400) / 1000, AREA.minY + (i % 250) / 1000] })

/** A box around the city's centre holding about `target` objects (grown until it does). */
async function boxHolding (pool: pg.Pool, tenantId: string, target: number): Promise<[number, number, number, number]> {
  const cx = (AREA.minX + AREA.maxX) / 2
  const cy = (AREA.minY + AREA.maxY) / 2
  let lo = 0
  let hi = 0.2
  for (let i = 0; i < 20; i++) {
    const h = (lo + hi) / 2
    const r = await pool.query(`SELECT count(*)::int AS n FROM objects o WHERE o.tenant_id = $1 AND o.deleted_at IS NULL AND ${BBOX_SQL}`, [tenantId, cx - h, cy - h * 0.6, cx + h, cy + h * 0.6])
    if (Math.abs(r.rows[0].n - target) < target * 0.03) return [cx - h, cy - h * 0.6, cx + h, cy + h * 0.6]
    if (r.rows[0].n < target) lo = h
    else hi = h
  }
  throw new Error('no box holds the target count')
}

/** A radius around the city's centre holding about `target` objects. */
async function radiusHolding (pool: pg.Pool, tenantId: string, center: [number, number], target: number): Promise<number> {
  let lo = 0
  let hi = 20000
  for (let i = 0; i < 20; i++) {
    const m = Math.round((lo + hi) / 2)
    const r = await pool.query(`SELECT count(*)::int AS n FROM objects o WHERE o.tenant_id = $1 AND o.deleted_at IS NULL AND ${DWITHIN_SQL}`, [tenantId, ...center, m])
    if (Math.abs(r.rows[0].n - target) < target * 0.03) return m
    if (r.rows[0].n < target) lo = m
    else hi = m
  }
  throw new Error('no radius holds the target count')
}

/** Both sides must give the same answer before either is timed. */
function sameAnswer (path: string, ours: { items: Array<{ id: string }>, pagination: { total: number } }, raw: { items: Array<{ id: string }>, pagination: { total: number } }): void {
  const a = ours.items.map(o => o.id).join()
  const b = raw.items.map(o => o.id).join()
  if (a !== b || ours.pagination.total !== raw.pagination.total) throw new Error(`${path}: service and raw SQL disagree (total ${ours.pagination.total} vs ${raw.pagination.total})`)
}

export async function benchCore (env: CoreBenchEnv, say: (line: string) => void): Promise<{ figures: Figure[], city: City }> {
  const city = await seedCity(env.db, env.databaseUrl, 100_000)
  say(`core: seeded a city of ${city.count} objects (${city.typeIds.length} types) by COPY in ${city.seedMs} ms`)
  const figures: Figure[] = []
  const token = env.tokenFor(city.tenantId)
  const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 16 })
  const get = (path: string) => http(env, token, 'GET', path)
  // The timed sides read every answer as text (the raw side receives PostgreSQL's JSON as text).
  const timed = (method: string, path: string, body?: unknown, t = token) => httpText(env, t, method, path, body)
  const floor = await startFloor(env.databaseUrl)
  // The floor side of a path: its raw statement by name, with the raw side's parameters.
  const viaFloor = (name: string, params: unknown[], post = false) => post
    ? httpText(floor, '', 'POST', `/q/${name}`, params)
    : httpText(floor, '', 'GET', `/q/${name}?p=${encodeURIComponent(JSON.stringify(params))}`)
  // A write path's rounds each begin with the tenant's audit chain sequenced (untimed), and end
  // when their own events are (timed): every side pays for sequencing its own events, none for
  // another's. Without it, the chain's sweep and the API's sequencer would sequence the raw side's
  // and the floor's events in whichever round came next, mostly ours.
  const sequenced = () => audit.sequencePending(env.db, city.tenantId)
  // BENCH_PATHS=create,bbox measures only the paths whose label holds one of the words.
  const only = (process.env.BENCH_PATHS ?? '').split(',').map(w => w.trim()).filter(Boolean)
  const wanted = (path: string) => only.length === 0 || only.some(w => path.includes(w))
  const measure: Measure = async (path, goal, n, c, ours, raw, viaHttp, writes = false) => {
    if (!wanted(path)) return
    // The load generator's CPU per call on each side (this process: pg's driver for the raw side,
    // the HTTP client for the others), the median over the timed rounds.
    const cpu: Record<string, number[]> = { raw: [], floor: [], ours: [] }
    const side = (op: Side, name: string) => () => withClientCpu(us => cpu[name].push(us / n), async () => {
      if (!writes) return throughput(n, c, async i => { await op(i) })
      await sequenced()
      const t0 = process.hrtime.bigint()
      await throughput(n, c, async i => { await op(i) })
      await sequenced()
      return n / (Number(process.hrtime.bigint() - t0) / 1e9)
    })
    const r = await compare(env.rounds, side(ours, 'ours'), side(raw, 'raw'), viaHttp === undefined ? undefined : side(viaHttp, 'floor'), true)
    const client = (name: string) => median(cpu[name].slice(1)).toFixed(0)
    figures.push({ path, raw: r.baseline, ours: r.candidate, ratio: r.ratio, goal, ...(r.third !== undefined ? { floor: r.third } : {}) })
    recordFigure(path, r)
    say(`  ${path}: raw ${r.baseline.toFixed(0)}/s,${r.third !== undefined ? ` HTTP floor ${r.third.toFixed(0)}/s,` : ''} ours ${r.candidate.toFixed(0)}/s, ratio ${r.ratio.toFixed(2)}` +
      ` (load generator CPU per call: raw ${client('raw')} us${viaHttp !== undefined ? `, floor ${client('floor')} us` : ''}, ours ${client('ours')} us)`)
  }
  const rawBody = async (text: string, params: unknown[]) => JSON.parse((await pool.query(text, params)).rows[0].body)
  // The timed raw side: each path's statement prepared under its name (planned once per
  // connection, as ours and the floor's are), through the same driver.
  const raw = (name: string, params: unknown[]) => pool.query({ name, text: FLOOR_STATEMENTS[name], values: params })
  const stopChores = workerChores(env.db)
  try {
    // Create: the raw side writes the same rows into the same tenant (the city's), so both pay for
    // the same index paths (a tenant's subtree of each index holds its 100,000 objects; an empty
    // tenant of its own would make each raw insert cheaper). Its audit events are sequenced by the
    // API's sweep and by the round's end (measure's `writes`), as ours by the API's sequencer.
    const rawTenant = city.tenantId
    const typeId = city.typeIds[0]
    const actor = JSON.stringify({ sub: 'bench', roles: ['owner'] })
    const rawCreate = (i: number) => [randomUUID(), rawTenant, typeId, JSON.stringify(attrs(i)), JSON.stringify(point(i)), actor]
    const creates: [Side, Side, Side] = [
      i => timed('POST', '/v1/objects', { typeId, attributes: attrs(i), geometry: point(i) }),
      i => raw('create', rawCreate(i)),
      i => viaFloor('create', rawCreate(i), true)]
    // Every side first makes 3,000 creates untimed: V8 optimizes the create path over its first
    // few thousand calls, which a running service did long ago; a shorter warm-up leaves the
    // timed rounds still climbing.
    if (wanted('create')) for (const side of creates) await throughput(3000, 16, async i => { await side(i) })
    for (const [c, n] of [[1, 1000], [16, 1500]] as const) await measure(`create, c${c}`, 0.5, n, c, ...creates, true)
    const ids = (await pool.query('SELECT id FROM objects WHERE tenant_id = $1 ORDER BY random() LIMIT 5000', [city.tenantId])).rows.map(r => r.id as string)
    for (const [c, n] of [[1, 1000], [16, 5000]] as const) {
      await measure(`get by id, c${c}`, c === 16 ? 0.6 : null, n, c, i => timed('GET', `/v1/objects/${ids[i % ids.length]}`), i => raw('get', [ids[i % ids.length], city.tenantId]),
        i => viaFloor('get', [ids[i % ids.length], city.tenantId]))
    }
    for (const dir of ['asc', 'desc'] as const) {
      const path = `/v1/objects?limit=100&sortBy=createdAt&sortOrder=${dir}`
      const text = rawList(dir === 'asc' ? 'ASC' : 'DESC')
      sameAnswer(`list ${dir}`, await get(path), await rawBody(text, [city.tenantId]))
      for (const [c, n] of [[1, 200], [10, 600]] as const) {
        await measure(`list 100 by createdAt ${dir}, c${c}`, 0.5, n, c, () => timed('GET', path), () => raw(`list-${dir}`, [city.tenantId]), () => viaFloor(`list-${dir}`, [city.tenantId]))
      }
    }
    const box = await boxHolding(pool, city.tenantId, 1000)
    const bboxBody = { filters: [{ field: 'geometry', operator: 'bbox', value: box }], limit: 1000 }
    const bboxSql = rawSpatial(BBOX_SQL)
    sameAnswer('bbox', await http(env, token, 'POST', '/v1/queries/objects/run', bboxBody), await rawBody(bboxSql, [city.tenantId, ...box]))
    for (const [c, n] of [[1, 60], [10, 200]] as const) {
      await measure(`bbox 1,000 of 100,000, c${c}`, c === 10 ? 0.67 : null, n, c,
        () => timed('POST', '/v1/queries/objects/run', bboxBody), () => raw('bbox', [city.tenantId, ...box]), () => viaFloor('bbox', [city.tenantId, ...box]))
    }
    const center: [number, number] = [(AREA.minX + AREA.maxX) / 2, (AREA.minY + AREA.maxY) / 2]
    const meters = await radiusHolding(pool, city.tenantId, center, 1000)
    const dwithinBody = { filters: [{ field: 'geometry', operator: 'dwithin', value: { type: 'Point', coordinates: center }, distanceMeters: meters }], limit: 1000 }
    const dwithinSql = rawSpatial(DWITHIN_SQL)
    sameAnswer('dwithin', await http(env, token, 'POST', '/v1/queries/objects/run', dwithinBody), await rawBody(dwithinSql, [city.tenantId, ...center, meters]))
    await measure('dwithin 1,000 of 100,000, c10', 0.67, 200, 10,
      () => timed('POST', '/v1/queries/objects/run', dwithinBody), () => raw('dwithin', [city.tenantId, ...center, meters]),
      () => viaFloor('dwithin', [city.tenantId, ...center, meters]))
    // Batch: 1,000 objects per request against one multi-row statement writing the same rows.
    const batch = (k: number) => Array.from({ length: 1000 }, (_, i) => ({ typeId, attributes: attrs(k * 1000 + i), geometry: point(k * 1000 + i) }))
    const rawBatchParams = (k: number) => [JSON.stringify(batch(k).map((o, n) => ({ n, id: randomUUID(), attributes: o.attributes, geometry: o.geometry }))), rawTenant, typeId, actor]
    const rawBatch = (k: number) => raw('batch', rawBatchParams(k))
    await measure('batch create 1,000, c1 (batches/s)', 0.5, 4, 1,
      k => timed('POST', '/v1/objects/batch', { items: batch(k) }),
      k => rawBatch(k), k => viaFloor('batch', rawBatchParams(k), true), true)

    // Bulk loading through the API: 1,000 per request, 4 requests in flight (the database works on
    // two of them at once on two cores), as objects/s, against the raw multi-row statement alike.
    await measure('bulk load, 1,000 per request, c4 (batches/s)', 0.5, 12, 4, k => timed('POST', '/v1/objects/batch', { items: batch(100 + k) }), k => rawBatch(100 + k),
      k => viaFloor('batch', rawBatchParams(100 + k), true), true)
    const bulk = figures[figures.length - 1]
    if (bulk?.path.startsWith('bulk load')) figures.push({ path: 'bulk load objects/s, c4 (goal: at least 6,200/s on a quiet machine)', raw: bulk.raw * 1000, ours: bulk.ours * 1000, ratio: bulk.ratio, goal: null, ...(bulk.floor !== undefined ? { floor: bulk.floor * 1000 } : {}) })

    if (process.env.BENCH_MILLION !== '0') await benchMillion(env, pool, city, box, figures, measure, viaFloor, say)
  } finally {
    stopChores()
    floor.stop()
    await pool.end()
  }
  return { figures, city }
}

/**
 * The table of docs/performance.md: path, raw SQL, the HTTP floor, ours, ours/raw (the goal's
 * ratio), floor/raw (the most an HTTP service got) and ours/floor (the share of it we get).
 */
export function table (figures: Figure[]): string[] {
  const out = ['| path | raw SQL (ops/s) | HTTP floor (ops/s) | ours (ops/s) | ours/raw | floor/raw | ours/floor | goal (ours/raw) |', '|---|---:|---:|---:|---:|---:|---:|---:|']
  for (const f of figures) {
    const goal = f.goal === null ? '' : `>= ${f.goal}${f.ratio >= f.goal ? '' : ' (missed)'}`
    const fl = f.floor === undefined ? ['', '', ''] : [f.floor.toFixed(0), (f.floor / f.raw).toFixed(2), (f.ours / f.floor).toFixed(2)]
    out.push(`| ${f.path} | ${f.raw.toFixed(0)} | ${fl[0]} | ${f.ours.toFixed(0)} | ${f.ratio.toFixed(2)} | ${fl[1]} | ${fl[2]} | ${goal} |`)
  }
  return out
}

type Side = (i: number) => Promise<unknown>
/** Measures one path: ours, the raw SQL and (when given) the raw SQL behind the HTTP floor. */
type Measure = (path: string, goal: number | null, n: number, c: number, ours: Side, raw: Side, floor?: Side, writes?: boolean) => Promise<void>
type ViaFloor = (name: string, params: unknown[], post?: boolean) => Promise<unknown>

/**
 * A second tenant of 1,000,000 objects in the same area: its sorted pages at that size, and the
 * city's bbox beside it (the spatial index serves one tenant's rows: the city's figure should not
 * move). The bbox is measured again alone-vs-beside as ours/ours.
 */
async function benchMillion (env: CoreBenchEnv, pool: pg.Pool, city: City, box: [number, number, number, number], figures: Figure[], measure: Measure, viaFloor: ViaFloor, say: (line: string) => void): Promise<void> {
  const bboxBody = { filters: [{ field: 'geometry', operator: 'bbox', value: box }], limit: 1000 }
  const cityToken = env.tokenFor(city.tenantId)
  const bboxAlone = figures.find(f => f.path === 'bbox 1,000 of 100,000, c10')
  const big = await seedCity(env.db, env.databaseUrl, 1_000_000, 2)
  say(`core: seeded a neighbour of ${big.count} objects in the same area by COPY in ${big.seedMs} ms`)
  const token = env.tokenFor(big.tenantId)
  for (const dir of ['asc', 'desc'] as const) {
    const path = `/v1/objects?limit=100&sortBy=createdAt&sortOrder=${dir}`
    const text = rawList(dir === 'asc' ? 'ASC' : 'DESC')
    sameAnswer(`list ${dir} 1M`, await http(env, token, 'GET', path), JSON.parse((await pool.query(text, [big.tenantId])).rows[0].body))
    for (const [c, n] of [[1, 200], [10, 600]] as const) {
      await measure(`list 100 by createdAt ${dir} of 1,000,000, c${c}`, 0.5, n, c, () => httpText(env, token, 'GET', path), () => pool.query({ name: `list-${dir}`, text, values: [big.tenantId] }), () => viaFloor(`list-${dir}`, [big.tenantId]))
    }
  }
  // The neighbour's data stays beside the city's; its requests end TENANT_ALONE_SECONDS (30 s, the
  // API's default) before the city's bbox: an API process that served two tenants within that
  // time holds each to its heavy lane (the fairness section's subject), and this row is the index's.
  await untilAlone(Date.now(), say)
  const bboxSql = rawSpatial(BBOX_SQL)
  await measure('bbox 1,000 of 100,000 beside 1,000,000, c10', 0.67, 200, 10,
    () => httpText(env, cityToken, 'POST', '/v1/queries/objects/run', bboxBody), () => pool.query({ name: 'bbox', text: bboxSql, values: [city.tenantId, ...box] }), () => viaFloor('bbox', [city.tenantId, ...box]))
  const beside = figures[figures.length - 1]
  if (bboxAlone !== undefined) {
    figures.push({ path: 'bbox beside 1,000,000 / alone (ours, c10)', raw: bboxAlone.ours, ours: beside.ours, ratio: beside.ours / bboxAlone.ours, goal: 0.83 })
  }
}
