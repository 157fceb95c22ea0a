import { randomUUID } from 'node:crypto'
import type { Db } from '../lib/db.js'
import * as queries from '../lib/queries/index.js'
import { benchContext } from './support.js'

// The query service against the same SQL written by hand, on 100,000 points of one tenant:
// a bbox query and a dwithin query, each returning about 1,000 objects (page and total).
// Both sides run through the same pool; rounds alternate which side goes first.

type Log = ((line: string) => void) | { info: (msg: string) => void }

const OBJECTS = 100_000
const GRID = 316 // 316 x 317 points over 1 x 1 degree around Berlin
const BBOX: [number, number, number, number] = [13.45, 52.45, 13.55, 52.55]
const CENTER: [number, number] = [13.5, 52.5]
const METERS = 4900
const WARMUP = 20
const ROUNDS = 6
const PER_ROUND = 30

async function seed (db: Db, tenantId: string): Promise<void> {
  const typeId = randomUUID()
  await db.raw('INSERT INTO object_types (id, tenant_id, key) VALUES (?, ?, ?)', [typeId, tenantId, 'bench_point'])
  await db.raw(`
    INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, version, valid_from, created_at, updated_at)
    SELECT gen_random_uuid(), ?, ?, 1, 'P-' || i, jsonb_build_object('n', i, 'height', i % 100),
      ST_SetSRID(ST_MakePoint(13 + (i % ${GRID}) / ${GRID}.0, 52 + (i / ${GRID}) / ${GRID}.0), 4326), 1,
      t.now, t.now + i * interval '1 millisecond', t.now + i * interval '1 millisecond'
    FROM generate_series(0, ${OBJECTS - 1}) i, (SELECT date_trunc('milliseconds', now()) AS now) t`, [tenantId, typeId])
  await db.raw('ANALYZE objects')
}

async function cleanup (db: Db, tenantId: string): Promise<void> {
  await db.raw('DELETE FROM objects WHERE tenant_id = ?', [tenantId])
  await db.raw('DELETE FROM object_types WHERE tenant_id = ?', [tenantId])
}

const COLS = `id, tenant_id, type_id, public_id, attributes, ST_AsGeoJSON(geom)::json AS geometry, workflow_state, version,
  valid_from, created_at, updated_at`

/** The hand-written equivalent: the page and the total, in parallel, as the service reads them. */
async function direct (db: Db, tenantId: string, predicate: string, params: unknown[]): Promise<{ ids: string[], total: number }> {
  const where = `tenant_id = ? AND deleted_at IS NULL AND ${predicate}`
  const bindings = [tenantId, ...params] as Array<string | number>
  const [rows, count] = await Promise.all([
    db.raw(`SELECT ${COLS} FROM objects WHERE ${where} ORDER BY created_at, id LIMIT 1000`, bindings),
    db.raw(`SELECT count(*) AS n FROM objects WHERE ${where}`, bindings)
  ])
  return { ids: rows.rows.map((r: { id: string }) => r.id), total: count.rows[0].n }
}

async function timed (n: number, fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await fn()
  return Number(process.hrtime.bigint() - t0) / 1e6
}

interface Case { name: string, service: () => Promise<{ ids: string[], total: number }>, direct: () => Promise<{ ids: string[], total: number }> }

async function measure (c: Case, say: (line: string) => void): Promise<void> {
  const a = await c.service()
  const b = await c.direct()
  if (a.total !== b.total || a.ids.join() !== b.ids.join()) throw new Error(`${c.name}: service and direct SQL disagree (${a.total} vs ${b.total})`)
  for (let i = 0; i < WARMUP; i++) { await c.service(); await c.direct() }
  let serviceMs = 0
  let directMs = 0
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      serviceMs += await timed(PER_ROUND, c.service)
      directMs += await timed(PER_ROUND, c.direct)
    } else {
      directMs += await timed(PER_ROUND, c.direct)
      serviceMs += await timed(PER_ROUND, c.service)
    }
  }
  const n = ROUNDS * PER_ROUND
  const ops = (ms: number) => (n / (ms / 1000)).toFixed(1)
  say(`queries ${c.name} (${a.ids.length} items, total ${a.total} of ${OBJECTS}): service ${ops(serviceMs)} ops/s, ` +
    `direct SQL ${ops(directMs)} ops/s, service time / direct time ${(serviceMs / directMs).toFixed(2)}x (goal <= 1.5x)`)
}

export async function benchQueries (db: Db, log: Log): Promise<void> {
  const say = (line: string) => { typeof log === 'function' ? log(line) : log.info(line) }
  const tenantId = `bench-q-${randomUUID().slice(0, 8)}`
  const t0 = Date.now()
  await seed(db, tenantId)
  say(`queries: seeded ${OBJECTS} objects in ${Date.now() - t0} ms`)
  try {
    const ctx = benchContext(db, tenantId)
    const viaService = async (filter: object) => {
      const r = await queries.runQuery(ctx, { filters: [filter], limit: 1000 }) as queries.QueryPage
      return { ids: r.items.map(o => o.id), total: r.pagination.total }
    }
    // The reference is the bare box test, exact for these points only; the service also
    // rechecks with ST_Intersects so that lines and polygons are answered exactly.
    await measure({
      name: 'bbox',
      service: () => viaService({ field: 'geometry', operator: 'bbox', value: BBOX }),
      direct: () => direct(db, tenantId, 'geom && ST_MakeEnvelope(?, ?, ?, ?, 4326)', BBOX)
    }, say)
    await measure({
      name: 'dwithin',
      service: () => viaService({ field: 'geometry', operator: 'dwithin', value: { type: 'Point', coordinates: CENTER }, distanceMeters: METERS }),
      direct: () => direct(db, tenantId, 'ST_DWithin(geom::geography, ST_SetSRID(ST_MakePoint(?, ?), 4326)::geography, ?, false)', [...CENTER, METERS])
    }, say)
  } finally {
    await cleanup(db, tenantId)
  }
}
