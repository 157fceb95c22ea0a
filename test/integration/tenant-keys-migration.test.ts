import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { createDb, type Db } from '../../lib/db.js'
import { migrationConfig } from '../../db/knex.js'
import { TEST_DATABASE_URL } from '../support/env.js'

// Migration 202611240200 on a database that holds rows of the previous schema: nothing is lost,
// no id changes, every key leads with tenant_id, and a cross-tenant reference is refused (before
// the migration, by the migration itself; after it, by the foreign keys).
const BEFORE = '202611230400_create_tenant_licenses_and_policies.ts'
const url = new URL(TEST_DATABASE_URL)
const name = `${url.pathname.slice(1)}_keymig`
const TABLES = ['object_types', 'object_type_versions', 'objects', 'object_versions', 'workflows', 'workflow_versions',
  'rules', 'rule_versions', 'relations', 'audit_events', 'outbox_events']

async function admin (sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() })
  await c.connect()
  try { await c.query(sql) } finally { await c.end() }
}

async function migrateUpTo (db: Db, last: string): Promise<void> {
  for (;;) {
    const [, pending] = await db.migrate.list(migrationConfig) as [unknown, Array<{ file: string }>]
    if (pending.length === 0 || pending[0].file > last) return
    await db.migrate.up(migrationConfig)
  }
}

/** Two tenants' worth of rows in the old schema, written as the service wrote them. */
async function seedOldSchema (db: Db, tenant: string): Promise<void> {
  const [type, obj1, obj2, wf, rule, rel] = Array.from({ length: 6 }, () => randomUUID())
  const statements = [
    `INSERT INTO object_types (id, tenant_id, key, published_version) VALUES (:type, :tenant, 'pole', 1)`,
    `INSERT INTO object_type_versions (type_id, version, tenant_id, status, definition) VALUES (:type, 1, :tenant, 'published', '{}')`,
    `INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, geom, version, valid_from, created_at, updated_at)
        SELECT id, :tenant, :type, 1, id::text, ST_SetSRID(ST_MakePoint(13.4, 52.5), 4326), 1, now(), now(), now()
        FROM unnest(ARRAY[:obj1, :obj2]::uuid[]) id`,
    `INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes, created_at, updated_at, valid_from, tx_from)
        SELECT id, 1, tenant_id, type_id, public_id, 'created', attributes, created_at, updated_at, valid_from, created_at FROM objects WHERE tenant_id = :tenant`,
    `INSERT INTO workflows (id, tenant_id, key) VALUES (:wf, :tenant, 'wf')`,
    `INSERT INTO workflow_versions (workflow_id, version, tenant_id, definition) VALUES (:wf, 1, :tenant, '{}')`,
    `INSERT INTO rules (id, tenant_id, key, kind) VALUES (:rule, :tenant, 'r', 'jsonlogic')`,
    `INSERT INTO rule_versions (rule_id, version, tenant_id, status, definition) VALUES (:rule, 1, :tenant, 'draft', '{}')`,
    `INSERT INTO relations (id, tenant_id, from_object_id, to_object_id, relation_type, created_at, updated_at) VALUES (:rel, :tenant, :obj1, :obj2, 'feeds', now(), now())`,
    `INSERT INTO audit_events (tenant_id, type, data, occurred_at) VALUES (:tenant, 'object.created', '{}', now())`,
    `INSERT INTO outbox_events (tenant_id, type, aggregate_type, aggregate_id, payload) VALUES (:tenant, 'object.created', 'object', :obj1, '{}')`
  ]
  for (const text of statements) await db.raw(text, { tenant, type, obj1, obj2, wf, rule, rel })
}

async function snapshot (db: Db): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {}
  for (const t of TABLES) out[t] = (await db.raw(`SELECT to_jsonb(x)::text AS r FROM ${t} x ORDER BY 1`)).rows.map((r: { r: string }) => r.r)
  return out
}

/** `after` with only the columns `before` had (later migrations add columns, e.g. outbox_events.next_attempt_at). */
function withColumnsOf (before: Record<string, string[]>, after: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const [t, rows] of Object.entries(after)) {
    const keys = new Set(before[t].flatMap(r => Object.keys(JSON.parse(r))))
    out[t] = rows.map(r => JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(r)).filter(([k]) => keys.has(k))))).sort()
  }
  return out
}

describe('migration 202611240200 (tenant-keyed schema)', () => {
  let db: Db
  before(async () => {
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
    await admin(`CREATE DATABASE "${name}"`)
    db = createDb(Object.assign(new URL(url), { pathname: `/${name}` }).toString(), { poolMax: 2 })
    await migrateUpTo(db, BEFORE)
  })
  after(async () => {
    await db.destroy()
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
  })

  it('refuses, naming the table, while a row references a row of another tenant; keeps every row and id once it may run', async () => {
    await seedOldSchema(db, 'acme')
    await seedOldSchema(db, 'globex')
    // A version filed under another tenant than its object's: the new foreign key could not hold.
    await db.raw(`UPDATE object_versions SET tenant_id = 'globex' WHERE object_id = (SELECT id FROM objects WHERE tenant_id = 'acme' LIMIT 1)`)
    await assert.rejects(db.migrate.latest(migrationConfig), /object_versions\.object_id: 1 rows reference a row of another tenant/)
    await db.raw(`UPDATE object_versions v SET tenant_id = o.tenant_id FROM objects o WHERE o.id = v.object_id`)

    const before = await snapshot(db)
    await db.migrate.latest(migrationConfig)
    assert.deepEqual(withColumnsOf(before, await snapshot(db)), withColumnsOf(before, before), 'every row, id and value is unchanged')
  })

  it('leads every primary key, unique index and foreign key of a tenant table with tenant_id', async () => {
    const keys = await db.raw(`
      SELECT c.conrelid::regclass::text AS t, c.conname, c.contype, a.attname AS first
      FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
      JOIN pg_attribute ten ON ten.attrelid = c.conrelid AND ten.attname = 'tenant_id'
      WHERE c.contype IN ('p', 'u', 'f') AND c.connamespace = 'public'::regnamespace`)
    assert.ok(keys.rows.length >= 20)
    for (const k of keys.rows) assert.equal(k.first, 'tenant_id', `${k.t}.${k.conname} leads with ${k.first}`)
    const indexes = await db.raw(`
      SELECT i.indexrelid::regclass::text AS idx, a.attname AS first FROM pg_index i
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
      JOIN pg_attribute ten ON ten.attrelid = i.indrelid AND ten.attname = 'tenant_id'
      JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = 'public'::regnamespace
        AND i.indexrelid::regclass::text <> 'objects_attributes_gin'`)
    for (const i of indexes.rows) assert.equal(i.first, 'tenant_id', `${i.idx} leads with ${i.first}`)
  })

  it('refuses a row that references another tenant\'s row (23503)', async () => {
    const obj = (await db.raw("SELECT id, type_id FROM objects WHERE tenant_id = 'acme' LIMIT 1")).rows[0]
    await assert.rejects(db.raw(`INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes, created_at, updated_at, valid_from, tx_from)
      VALUES (?, 9, 'globex', ?, 'x', 'updated', '{}', now(), now(), now(), now())`, [obj.id, obj.type_id]), { code: '23503' })
  })
})
