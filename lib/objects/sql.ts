import { prepared, type Bindings, type Queryable, type Tx } from '../db.js'
import type { Geometry } from '../geo/geojson.js'

/** The uniform shape of an object row, current or historical. */
export interface ObjectRow {
  id: string
  tenant_id: string
  type_id: string
  public_id: string
  attributes: Record<string, unknown>
  geometry: Geometry | null
  workflow_state: string | null
  version: number
  valid_from: Date
  created_at: Date
  updated_at: Date
}

const COLS = `id, tenant_id, type_id, public_id, attributes, ST_AsGeoJSON(geom)::json AS geometry,
  workflow_state, version, valid_from, created_at, updated_at`

// Transaction-time stamps come from one clock read per statement (the MATERIALIZED CTE), truncated
// to milliseconds so that an API timestamp used as asOf finds the version it came from. They are
// read after the row lock, so each object's versions get non-decreasing stamps.
const NOW = `now AS MATERIALIZED (SELECT date_trunc('milliseconds', clock_timestamp()) AS t)`

// A client's validFrom is kept at millisecond precision too: the API shows milliseconds, and the
// value it shows must find the version again as validAt.
const VALID_FROM = "date_trunc('milliseconds', ?::timestamptz)"

const VERSION_INSERT = `INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes,
  geom, workflow_state, created_at, updated_at, valid_from, tx_from, actor)`

export interface NewObject {
  id: string
  tenantId: string
  typeId: string
  typeVersion: number
  publicId: string
  attributes: Record<string, unknown>
  geometry: Geometry | null
  workflowState: string | null
  validFrom: string | null
  actor: object
}

/**
 * Inserts the object and its first history version in one statement, on condition that
 * `typeVersion` is still the type's published version and the type is live. The condition holds
 * a KEY SHARE lock on the type row until commit, so a concurrent type delete (which locks the row
 * FOR UPDATE before counting live objects) either waits and sees this object, or wins and makes
 * the condition fail. Returns null when the condition failed: nothing was written.
 */
export async function insertObject (tx: Tx, o: NewObject): Promise<ObjectRow | null> {
  const r = await prepared(tx, 'objects.insert', `
    WITH ${NOW},
    t AS (
      SELECT 1 FROM object_types WHERE id = ? AND tenant_id = ? AND published_version = ? AND deleted_at IS NULL
      FOR KEY SHARE
    ),
    o AS (
      INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, workflow_state, version, valid_from, created_at, updated_at)
      SELECT ?, ?, ?, ?, ?, ?::jsonb, ST_SetSRID(ST_GeomFromGeoJSON(?::text), 4326), ?, 1, coalesce(${VALID_FROM}, now.t), now.t, now.t FROM now, t
      RETURNING *
    ),
    v AS (
      ${VERSION_INSERT}
      SELECT id, 1, tenant_id, type_id, public_id, 'created', attributes, geom, workflow_state, created_at, updated_at, valid_from, created_at, ?::jsonb FROM o
    )
    SELECT ${COLS} FROM o`,
  [o.typeId, o.tenantId, o.typeVersion, o.id, o.tenantId, o.typeId, o.typeVersion, o.publicId, JSON.stringify(o.attributes),
    o.geometry === null ? null : JSON.stringify(o.geometry), o.workflowState, o.validFrom, JSON.stringify(o.actor)])
  return r.rows[0] ?? null
}

/** The live object, locked until the transaction ends (serialises writers of one object). */
export async function lockObject (tx: Tx, tenantId: string, id: string): Promise<ObjectRow | null> {
  const r = await prepared(tx, 'objects.lock', `SELECT ${COLS} FROM objects WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL FOR UPDATE`, [id, tenantId])
  return r.rows[0] ?? null
}

export interface VersionChange {
  operation: 'updated' | 'transitioned'
  attributes: Record<string, unknown>
  /** undefined keeps the geometry; null clears it. */
  geometry: Geometry | null | undefined
  workflowState: string | null
  /** null: now, or the current validFrom if that lies in the future. */
  validFrom: string | null
  actor: object
}

/**
 * Writes version N+1 of a locked object: closes version N in both times, updates the current
 * row and appends the new version, in one statement.
 */
export async function writeVersion (tx: Tx, current: ObjectRow, c: VersionChange): Promise<ObjectRow> {
  const keepGeom = c.geometry === undefined
  const r = await prepared(tx, 'objects.write-version', `
    WITH ${NOW},
    vf AS MATERIALIZED (SELECT coalesce(${VALID_FROM}, greatest(now.t, ?::timestamptz)) AS t FROM now),
    closed AS (
      UPDATE object_versions SET tx_to = now.t, valid_to = vf.t FROM now, vf
      WHERE object_id = ? AND version = ?
    ),
    o AS (
      UPDATE objects SET attributes = ?::jsonb,
        geom = CASE WHEN ? THEN geom ELSE ST_SetSRID(ST_GeomFromGeoJSON(?::text), 4326) END,
        workflow_state = ?, version = version + 1, valid_from = vf.t, updated_at = now.t
      FROM now, vf WHERE id = ?
      RETURNING objects.*
    ),
    v AS (
      ${VERSION_INSERT}
      SELECT id, version, tenant_id, type_id, public_id, ?, attributes, geom, workflow_state, created_at, updated_at, valid_from, updated_at, ?::jsonb FROM o
    )
    SELECT ${COLS} FROM o`,
  [c.validFrom, current.valid_from, current.id, current.version, JSON.stringify(c.attributes), keepGeom,
    c.geometry == null ? null : JSON.stringify(c.geometry), c.workflowState, current.id, c.operation, JSON.stringify(c.actor)])
  return r.rows[0]
}

/** Soft delete: the object leaves the current table's live set; a 'deleted' version closes history. */
export async function deleteObject (tx: Tx, current: ObjectRow, actor: object): Promise<ObjectRow> {
  const r = await prepared(tx, 'objects.delete', `
    WITH ${NOW},
    vf AS MATERIALIZED (SELECT greatest(now.t, ?::timestamptz) AS t FROM now),
    closed AS (
      UPDATE object_versions SET tx_to = now.t, valid_to = vf.t FROM now, vf WHERE object_id = ? AND version = ?
    ),
    o AS (
      UPDATE objects SET deleted_at = now.t, version = version + 1, updated_at = now.t FROM now WHERE id = ? RETURNING objects.*
    ),
    v AS (
      ${VERSION_INSERT}
      SELECT o.id, o.version, o.tenant_id, o.type_id, o.public_id, 'deleted', o.attributes, o.geom, o.workflow_state, o.created_at, o.updated_at, vf.t, o.updated_at, ?::jsonb FROM o, vf
    )
    SELECT ${COLS} FROM o`,
  [current.valid_from, current.id, current.version, current.id, JSON.stringify(actor)])
  return r.rows[0]
}

export async function nextPublicIdSeq (tx: Tx, tenantId: string, typeId: string): Promise<number> {
  const r = await tx.raw(`
    INSERT INTO public_id_counters (tenant_id, type_id, value) VALUES (?, ?, 1)
    ON CONFLICT (tenant_id, type_id) DO UPDATE SET value = public_id_counters.value + 1
    RETURNING value`, [tenantId, typeId])
  return Number(r.rows[0].value)
}

/** How to read: the current table, a transaction-time instant, or a valid-time instant. */
export type TimePoint = { asOf?: string, validAt?: string }

const VERSION_COLS = `object_id AS id, tenant_id, type_id, public_id, attributes, geom, workflow_state, version,
  valid_from, created_at, updated_at`

/**
 * The set of live objects at a time point, as a subquery with one row per object. Current reads
 * use the objects table (and its indexes); asOf reads the version whose transaction-time range
 * holds the instant, validAt the version whose valid-time range does. A 'deleted' version means
 * the object did not exist then.
 */
export function objectSource (tenantParam: Bindings, t: TimePoint): { sql: string, params: Bindings } {
  if (t.asOf !== undefined) {
    return {
      sql: `(SELECT ${VERSION_COLS} FROM object_versions WHERE tenant_id = ? AND tx_from <= ?::timestamptz
        AND (tx_to IS NULL OR tx_to > ?::timestamptz) AND operation <> 'deleted')`,
      params: [...tenantParam, t.asOf, t.asOf]
    }
  }
  if (t.validAt !== undefined) {
    return {
      sql: `(SELECT ${VERSION_COLS} FROM object_versions WHERE tenant_id = ? AND tx_to IS NULL AND valid_from <= ?::timestamptz
          AND operation <> 'deleted'
        UNION ALL
        SELECT ${VERSION_COLS} FROM object_versions WHERE tenant_id = ? AND tx_to IS NOT NULL AND valid_from <= ?::timestamptz
          AND valid_to > ?::timestamptz AND operation <> 'deleted')`,
      params: [...tenantParam, t.validAt, ...tenantParam, t.validAt, t.validAt]
    }
  }
  return {
    sql: `(SELECT id, tenant_id, type_id, public_id, attributes, geom, workflow_state, version, valid_from, created_at, updated_at
      FROM objects WHERE tenant_id = ? AND deleted_at IS NULL)`,
    params: [...tenantParam]
  }
}

export async function findObject (db: Queryable, tenantId: string, id: string, t: TimePoint): Promise<ObjectRow | null> {
  const src = objectSource([tenantId], t)
  const text = `SELECT ${COLS} FROM ${src.sql} o WHERE o.id = ?`
  // The current read is the hot one and its text is fixed; time-travel reads vary less often.
  const current = t.asOf === undefined && t.validAt === undefined
  const r = await (current ? prepared(db, 'objects.get', text, [...src.params, id]) : db.raw(text, [...src.params, id]))
  return r.rows[0] ?? null
}

export interface ListFilter { typeId?: string, sort: { expr: string, params: Bindings }, order: 'asc' | 'desc', limit: number, offset: number }

export async function listObjects (db: Queryable, tenantId: string, t: TimePoint, f: ListFilter): Promise<{ rows: ObjectRow[], total: number }> {
  const src = objectSource([tenantId], t)
  const where: string[] = []
  const params: Bindings = []
  if (f.typeId !== undefined) { where.push('o.type_id = ?'); params.push(f.typeId) }
  const cond = where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''
  const dir = f.order === 'desc' ? 'DESC' : 'ASC'
  const [rows, count] = await Promise.all([
    db.raw(`SELECT ${COLS} FROM ${src.sql} o ${cond} ORDER BY ${f.sort.expr} ${dir} NULLS LAST, o.id ${dir} LIMIT ? OFFSET ?`,
      [...src.params, ...params, ...f.sort.params, f.limit, f.offset]),
    db.raw(`SELECT count(*)::int AS n FROM ${src.sql} o ${cond}`, [...src.params, ...params])
  ])
  return { rows: rows.rows, total: count.rows[0].n }
}

export interface VersionRow extends ObjectRow {
  operation: 'created' | 'updated' | 'deleted' | 'transitioned'
  valid_to: Date | null
  tx_from: Date
  tx_to: Date | null
  actor: { sub: string, roles: string[] } | null
}

export async function listVersions (db: Queryable, tenantId: string, id: string, limit: number, offset: number): Promise<{ rows: VersionRow[], total: number }> {
  const [rows, count] = await Promise.all([
    db.raw(`SELECT object_id AS id, tenant_id, type_id, public_id, attributes, ST_AsGeoJSON(geom)::json AS geometry, workflow_state,
        version, valid_from, created_at, updated_at, operation, valid_to, tx_from, tx_to, actor
      FROM object_versions WHERE tenant_id = ? AND object_id = ? ORDER BY version LIMIT ? OFFSET ?`, [tenantId, id, limit, offset]),
    db.raw('SELECT count(*)::int AS n FROM object_versions WHERE tenant_id = ? AND object_id = ?', [tenantId, id])
  ])
  return { rows: rows.rows, total: count.rows[0].n }
}

/**
 * Which of `ids` are live objects of the tenant. Takes FOR SHARE locks so that a concurrent
 * object delete waits for this transaction: a link is never created to an object being deleted.
 */
export async function lockLiveObjects (tx: Tx, tenantId: string, ids: string[]): Promise<Set<string>> {
  const r = await tx.raw(`SELECT id FROM objects WHERE tenant_id = ? AND id = ANY(?::uuid[]) AND deleted_at IS NULL
    ORDER BY id FOR SHARE`, [tenantId, ids])
  return new Set(r.rows.map((row: { id: string }) => row.id))
}

/** Whether `id` is a live object of the tenant. */
export async function liveObjectExists (db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const r = await db.raw('SELECT 1 FROM objects WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL', [tenantId, id])
  return r.rows.length > 0
}

/** Live objects among `ids` (one statement, whatever their number; by the primary key). */
export async function findLiveObjects (db: Queryable, tenantId: string, ids: string[]): Promise<ObjectRow[]> {
  const r = await db.raw(`SELECT ${COLS} FROM objects WHERE tenant_id = ? AND id = ANY(?::uuid[]) AND deleted_at IS NULL`, [tenantId, ids])
  return r.rows
}
