import { randomUUID } from 'node:crypto'
import pg from 'pg'
import type { Db } from '../lib/db.js'
import { Sequencer, eventHash } from '../lib/audit/index.js'
import * as objects from '../lib/objects/index.js'
import * as objectTypes from '../lib/object-types/index.js'
import { benchContext, benchTenant, compare, http, row, throughput } from './support.js'

export interface ObjectsBenchEnv {
  db: Db
  databaseUrl: string
  baseUrl: string
  tokenFor: (tenant: string) => string
  rounds: number
}

const attrs = (i: number) => ({ name: `site ${i}`, height: i % 500 })
const point = (i: number) => ({ type: 'Point', coordinates: [13 + (i % 1000) / 1000, 52 + (i % 997) / 1000] })

// The rows one object create writes, done by hand: the baseline the HTTP path is measured against.
const RAW_CREATE = `
  WITH o AS (
    INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, version, valid_from, created_at, updated_at)
    VALUES ($1::uuid, $2, $3, 1, $1::text, $4::jsonb, ST_SetSRID(ST_GeomFromGeoJSON($5), 4326), 1, now(), now(), now()) RETURNING *
  ), v AS (
    INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes, geom, created_at, updated_at, valid_from, tx_from, actor)
    SELECT id, 1, tenant_id, type_id, public_id, 'created', attributes, geom, created_at, updated_at, valid_from, created_at, $6::jsonb FROM o
  ), a AS (
    INSERT INTO audit_events (tenant_id, type, actor, resource_type, resource_id, data, occurred_at)
    SELECT tenant_id, 'object.created', $6::jsonb, 'object', id::text, '{}', now() FROM o WHERE $7
  ), e AS (
    INSERT INTO outbox_events (tenant_id, type, aggregate_type, aggregate_id, payload)
    SELECT tenant_id, 'object.created', 'object', id::text, to_jsonb(o) - 'geom' FROM o
  )
  SELECT id FROM o`

const RAW_GET = `SELECT id, type_id, public_id, attributes, ST_AsGeoJSON(geom)::json AS geometry, workflow_state, version,
  valid_from, created_at, updated_at FROM objects WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL`

async function rawCreate (pool: pg.Pool, tenant: string, typeId: string, i: number, opts: { audit: 'none' | 'unsequenced' | 'head-lock' }): Promise<void> {
  const c = await pool.connect()
  try {
    await c.query('BEGIN')
    const actor = JSON.stringify({ sub: 'bench', roles: ['owner'] })
    const r = await c.query(RAW_CREATE, [randomUUID(), tenant, typeId, JSON.stringify(attrs(i)), JSON.stringify(point(i)), actor, opts.audit === 'unsequenced'])
    if (opts.audit === 'head-lock') {
      // Synchronous sequencing: the tenant's chain head is locked until COMMIT.
      const head = await c.query('SELECT sequence, hash FROM audit_heads WHERE tenant_id = $1 FOR UPDATE', [tenant])
      const sequence = Number(head.rows[0].sequence) + 1
      const occurredAt = new Date(Math.floor(Date.now()))
      const hash = eventHash(head.rows[0].hash, { sequence, type: 'object.created', actor: { sub: 'bench', roles: ['owner'] }, resourceType: 'object', resourceId: r.rows[0].id, data: {}, occurredAt: occurredAt.toISOString() })
      await c.query(`INSERT INTO audit_events (tenant_id, sequence, type, actor, resource_type, resource_id, data, occurred_at, previous_hash, hash)
        VALUES ($1, $2, 'object.created', $3, 'object', $4, '{}', $5, $6, $7)`, [tenant, sequence, actor, r.rows[0].id, occurredAt, head.rows[0].hash, hash])
      await c.query('UPDATE audit_heads SET sequence = $2, hash = $3 WHERE tenant_id = $1', [tenant, sequence, hash])
    }
    await c.query('COMMIT')
  } catch (err) {
    await c.query('ROLLBACK')
    throw err
  } finally {
    c.release()
  }
}

async function createType (env: ObjectsBenchEnv, token: string): Promise<string> {
  const t = await http(env, token, 'POST', '/v1/object-types', {
    key: 'site', name: 'Site',
    attributeSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, height: { type: 'number', minimum: 0 } } },
    geometry: { required: true, types: ['Point'] }
  })
  await http(env, token, 'POST', `/v1/object-types/${t.id}/publish`, { to: 'published' })
  return t.id
}

export async function benchObjects (env: ObjectsBenchEnv): Promise<string[]> {
  const out: string[] = []
  const tenant = benchTenant('objects')
  const token = env.tokenFor(tenant)
  const typeId = await createType(env, token)
  const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 16 })
  await pool.query("INSERT INTO audit_heads (tenant_id, sequence, hash) VALUES ($1, 0, repeat('0', 64)) ON CONFLICT DO NOTHING", [`${tenant}-raw`])
  const ids: string[] = []
  const httpCreate = (n: number, c: number) => () => throughput(n, c, async i => { ids.push((await http(env, token, 'POST', '/v1/objects', { typeId, attributes: attrs(i), geometry: point(i) })).id) })
  const sqlCreate = (n: number, c: number, audit: 'none' | 'unsequenced' | 'head-lock' = 'unsequenced') => () => throughput(n, c, i => rawCreate(pool, `${tenant}-raw`, typeId, i, { audit }))

  for (const [c, n] of [[1, 300], [16, 1500]] as const) {
    out.push(row(`object create, HTTP vs raw SQL, concurrency ${c}`, await compare(env.rounds, httpCreate(n, c), sqlCreate(n, c))))
  }
  for (const [c, n] of [[1, 1000], [16, 5000]] as const) {
    out.push(row(`object get by id, HTTP vs raw SQL, concurrency ${c}`, await compare(env.rounds,
      () => throughput(n, c, async i => { await http(env, token, 'GET', `/v1/objects/${ids[i % ids.length]}`) }),
      () => throughput(n, c, async i => { await pool.query(RAW_GET, [ids[i % ids.length], tenant]) }))))
  }

  // The floor: an HTTP round trip that touches no database, against the same raw SQL get. No
  // endpoint can beat this ratio on this machine; the get-by-id ratio is read against it.
  for (const [c, n] of [[1, 1000], [16, 5000]] as const) {
    out.push(row(`floor: GET /v1/health/live vs raw SQL get, c${c}`, await compare(env.rounds,
      () => throughput(n, c, async () => { await http(env, token, 'GET', '/v1/health/live') }),
      () => throughput(n, c, async i => { await pool.query(RAW_GET, [ids[i % ids.length], tenant]) }))))
  }

  // The audit step: what the unsequenced insert costs, and what a per-tenant head lock held to
  // COMMIT (synchronous sequencing) would cost, at concurrency 16 in one tenant.
  out.push(row('raw create, unsequenced audit vs no audit, c16', await compare(env.rounds, sqlCreate(1500, 16, 'unsequenced'), sqlCreate(1500, 16, 'none'))))
  out.push(row('raw create, head-lock audit vs no audit, c16', await compare(env.rounds, sqlCreate(1500, 16, 'head-lock'), sqlCreate(1500, 16, 'none'))))
  const sequencer = new Sequencer(env.db, err => { throw err })
  // Objects of tenant-lib need a published type of that tenant.
  const setup = benchContext(env.db, `${tenant}-lib`)
  const libTypeId = (await objectTypes.createObjectType(setup, { key: 'site', name: 'Site' })).id
  await objectTypes.publishObjectType(setup, libTypeId, { to: 'published' })
  const libOp = (mode: 'async' | 'sync') => {
    const ctx = benchContext(env.db, `${tenant}-lib`, { AUDIT_SEQUENCING: mode }, sequencer)
    return () => throughput(1500, 16, async i => { await objects.createObject(ctx, { typeId: libTypeId, attributes: attrs(i), geometry: point(i) }) })
  }
  out.push(row('pipeline create, async vs sync sequencing, c16', await compare(env.rounds, libOp('async'), libOp('sync'))))
  await sequencer.stop()
  await pool.end()
  return out
}
