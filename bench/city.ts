import { randomUUID } from 'node:crypto'
import { pipeline } from 'node:stream/promises'
import { Readable } from 'node:stream'
import pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import type { Db } from '../lib/db.js'
import * as objectTypes from '../lib/object-types/index.js'
import { benchContext } from './support.js'

// A dataset shaped like a city: points clustered around neighbourhood centres in a 0.4 x 0.25
// degree area around Berlin, four published types in city proportions, a few attributes each.
// Seeded by COPY (seconds, not the API), with the history row and the counter rows the service
// would have written, so every read path sees what a loaded tenant holds.

export const AREA = { minX: 13.2, minY: 52.4, maxX: 13.6, maxY: 52.65 }

/** The tile [z, x, y] holding a lon/lat position. */
export function tileAt (z: number, lon: number, lat: number): [number, number, number] {
  const n = 2 ** z
  const r = lat * Math.PI / 180
  return [z, Math.floor((lon + 180) / 360 * n), Math.floor((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2 * n)]
}

const TYPES = [
  { key: 'building', share: 0.5, attrs: (r: () => number, i: number) => ({ name: `building ${i}`, height: Math.round(3 + r() * 60), floors: 1 + Math.floor(r() * 12), use: pick(r, ['residential', 'office', 'retail', 'school']) }) },
  { key: 'tree', share: 0.3, attrs: (r: () => number, i: number) => ({ name: `tree ${i}`, height: Math.round(2 + r() * 25), species: pick(r, ['oak', 'linden', 'maple', 'pine', 'birch']) }) },
  { key: 'streetlight', share: 0.15, attrs: (r: () => number, i: number) => ({ name: `light ${i}`, height: 4 + Math.floor(r() * 6), lamp: pick(r, ['led', 'sodium']) }) },
  { key: 'bench', share: 0.05, attrs: (r: () => number, i: number) => ({ name: `bench ${i}`, height: 1, seats: 2 + Math.floor(r() * 4) }) }
]

function pick<T> (r: () => number, xs: T[]): T {
  return xs[Math.floor(r() * xs.length)]
}

/** mulberry32: a small seeded generator, so every run builds the same city. */
function random (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface City { tenantId: string, typeIds: string[], count: number, seedMs: number }

/** Creates and publishes the city's types through lib (so the service's caches and rows are real). */
async function createTypes (db: Db, tenantId: string): Promise<string[]> {
  const ctx = benchContext(db, tenantId)
  const ids: string[] = []
  for (const t of TYPES) {
    const created = await objectTypes.createObjectType(ctx, {
      key: t.key, name: t.key,
      attributeSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, height: { type: 'number', minimum: 0 } } },
      geometry: { required: true, types: ['Point'] }
    })
    await objectTypes.publishObjectType(ctx, created.id, { to: 'published' })
    ids.push(created.id)
  }
  return ids
}

/** The COPY text rows: clustered points, created one every ~300 ms over the past year. */
function* rows (tenantId: string, typeIds: string[], count: number, seed: number): Generator<string> {
  // The same neighbourhoods for every seed (one city); the objects in them differ by seed.
  const rc = random(1)
  const centres = Array.from({ length: 60 }, () => [AREA.minX + rc() * (AREA.maxX - AREA.minX), AREA.minY + rc() * (AREA.maxY - AREA.minY), 0.002 + rc() * 0.01])
  const r = random(seed + 1000)
  const start = Date.UTC(2025, 0, 1)
  let batch = ''
  for (let i = 0; i < count; i++) {
    const u = r()
    let k = 0
    for (let acc = TYPES[0].share; u > acc && k < TYPES.length - 1;) acc += TYPES[++k].share
    const [cx, cy, spread] = centres[Math.floor(r() * centres.length)]
    // Box-Muller: a normal spread around the centre.
    const rad = Math.sqrt(-2 * Math.log(1 - r())) * spread
    const ang = 2 * Math.PI * r()
    const x = (cx + rad * Math.cos(ang)).toFixed(7)
    const y = (cy + rad * Math.sin(ang) * 0.6).toFixed(7)
    const at = new Date(start + i * 300 + Math.floor(r() * 300)).toISOString()
    const id = randomUUID()
    batch += `${id}\t${tenantId}\t${typeIds[k]}\t1\t${id}\t${JSON.stringify(TYPES[k].attrs(r, i))}\tSRID=4326;POINT(${x} ${y})\t1\t${at}\t${at}\t${at}\n`
    if (batch.length > 1 << 16) { yield batch; batch = '' }
  }
  if (batch !== '') yield batch
}

/** Seeds `count` objects for a new tenant; returns its id and the types. */
export async function seedCity (db: Db, databaseUrl: string, count: number, seed = 1): Promise<City> {
  const tenantId = `bench-city-${randomUUID().slice(0, 8)}`
  const typeIds = await createTypes(db, tenantId)
  const t0 = Date.now()
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    await client.query('BEGIN')
    await pipeline(Readable.from(rows(tenantId, typeIds, count, seed)), client.query(copyFrom(
      'COPY objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, version, valid_from, created_at, updated_at) FROM STDIN')))
    // Before the versions' foreign-key checks are planned (see insertObjects).
    await client.query('ANALYZE objects')
    await client.query(`INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes, geom,
        workflow_state, created_at, updated_at, valid_from, tx_from, actor)
      SELECT id, 1, tenant_id, type_id, public_id, 'created', attributes, geom, workflow_state, created_at, updated_at, valid_from, created_at,
        '{"sub":"bench","roles":["owner"]}' FROM objects WHERE tenant_id = $1`, [tenantId])
    // The counters the pipeline would have kept: live objects and changes per type.
    await client.query(`INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
      SELECT tenant_id, c.counter, type_id::text, count(*) FROM objects, (VALUES ('objects'), ('object_changes')) c(counter)
      WHERE tenant_id = $1 GROUP BY 1, 2, 3`, [tenantId])
    await client.query('COMMIT')
    await client.query('ANALYZE object_versions')
  } finally {
    await client.end()
  }
  return { tenantId, typeIds, count, seedMs: Date.now() - t0 }
}

/**
 * Inserts `n` objects of one published type that has none yet, with their first versions and the
 * counter deltas the pipeline would have written, in one transaction. `attributes` and `geometry`
 * are SQL expressions of the row number `i`, their `?` bindings given in that order.
 *
 * The objects are ANALYZEd (in the transaction, which sees its own rows) before their versions are
 * inserted: each version's foreign-key check is a statement PostgreSQL plans once per connection,
 * by the statistics of that moment. If autovacuum had last analyzed `objects` while it held no
 * committed rows (after the bench's TRUNCATE, or during a seeding transaction), the planner costs
 * every index alike and could pick the GiST index on (tenant_id, geography) for the check: a scan
 * of all the tenant's rows for every version.
 */
export async function insertObjects (db: Db, tenantId: string, typeId: string, n: number, attributes: string, geometry: string, bindings: number[] = []): Promise<void> {
  await db.transaction(async tx => {
    await tx.raw(`
      INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, workflow_state, version, valid_from, created_at, updated_at)
      SELECT gen_random_uuid(), ?, ?, 1, 'o-' || i, ${attributes}, ${geometry}, NULL, 1, now(), now(), now()
      FROM generate_series(1, ?) i`, [tenantId, typeId, ...bindings, n])
    await tx.raw('ANALYZE objects')
    await tx.raw(`
      INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes, geom, workflow_state, created_at, updated_at, valid_from, tx_from, actor)
      SELECT id, 1, tenant_id, type_id, public_id, 'created', attributes, geom, workflow_state, created_at, updated_at, valid_from, created_at, NULL
      FROM objects WHERE tenant_id = ? AND type_id = ?`, [tenantId, typeId])
    await tx.raw(`INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
      SELECT ?, c, ?, ? FROM unnest(ARRAY['objects', 'object_changes']) c`, [tenantId, typeId, n])
  })
}
