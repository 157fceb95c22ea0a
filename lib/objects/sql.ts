import { coalesced, keyList, prepared, statementName, type Bindings, type Queryable, type Statement, type Tx } from '../db.js'
import type { Geometry } from '../geo/index.js'
import { boundedCount, type Total } from '../counting.js'
import type { FoldedStatement } from '../pipeline.js'

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
// to milliseconds so that an API timestamp used as asOf finds the version it came from. The
// statement starts after the row lock (lockObject is a statement of its own), so each object's
// versions get non-decreasing stamps. statement_timestamp() rather than clock_timestamp(): a
// tenant-sharded cluster (Citus) evaluates a STABLE clock once on the coordinator and refuses a
// VOLATILE one in UPDATE statements.
const NOW = `now AS MATERIALIZED (SELECT date_trunc('milliseconds', statement_timestamp()) AS t)`

// A client's validFrom is kept at millisecond precision too: the API shows milliseconds, and the
// value it shows must find the version again as validAt.
const VALID_FROM = "date_trunc('milliseconds', ?::timestamptz)"

const VERSION_INSERT = `INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes,
  geom, workflow_state, created_at, updated_at, valid_from, tx_from, actor, geometry_repair)`

export interface NewObject {
  id: string
  typeId: string
  typeVersion: number
  publicId: string
  attributes: Record<string, unknown>
  geometry: Geometry | null
  workflowState: string | null
  validFrom: string | null
  /** The type's geometry settings: whether an invalid geometry is repaired, and what it may become. */
  geometryRules: GeometryRules
}

/** What a write does with a geometry PostGIS finds invalid: refuse it, or repair it into one of `types` (empty: any). */
export interface GeometryRules { makeValid?: boolean, types: string[] }

// An object as the API shows it (dto.ts toObjectDto), built by PostgreSQL: timestamps as ISO text
// in UTC with milliseconds, as Date.toISOString gives them. List items add objectId.
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', ${ISO})`
export const objectJson = (o: string, listItem = false) => `json_build_object('id', ${o}.id, 'typeId', ${o}.type_id, 'publicId', ${o}.public_id,
  'attributes', ${o}.attributes, 'geometry', ST_AsGeoJSON(${o}.geom)::json, 'workflowState', ${o}.workflow_state, 'version', ${o}.version,
  'validFrom', ${iso(`${o}.valid_from`)}, 'createdAt', ${iso(`${o}.created_at`)}, 'updatedAt', ${iso(`${o}.updated_at`)}${listItem ? `, 'objectId', ${o}.id` : ''})`

/** One object to insert, with the audit event and counter deltas of its creation. */
export interface NewObjectChange { object: NewObject, audit: unknown, counts: unknown }

/**
 * Inserts objects (one or a batch) and their first history versions in one statement, each on
 * condition that its `typeVersion` is still the type's published version and the type is live;
 * the change rows come back with each object as the API shows it (built here, so the outbox
 * payload is exactly the response) for the pipeline to fold its audit, outbox and counter inserts
 * into the same statement (one round trip). The condition holds a KEY SHARE lock on the type rows
 * until commit, so a concurrent type delete (which locks the row FOR UPDATE before counting live
 * objects) either waits and sees these objects, or wins and makes the condition fail: objects
 * whose condition failed are not written and do not come back, and then neither are the others (all
 * or nothing: the statement may run alone in autocommit; the lock: object_types_lock_live,
 * migration 202611240201, which says why it is a function). All objects are of one tenant and
 * created by one actor; `n` orders them (audit arrival and outbox position follow it). Each
 * geometry passes objects_geometry (migration 202611280001) in `inp`: PostGIS's validity check,
 * the type's repair, or PW002 failing the whole statement.
 */
export function insertObjectsStatement (tenantId: string, actor: object, items: NewObjectChange[]): FoldedStatement {
  const input = items.map(({ object: o, audit, counts }, n) => ({
    n, id: o.id, type_id: o.typeId, type_version: o.typeVersion, public_id: o.publicId, attributes: o.attributes, geometry: o.geometry,
    workflow_state: o.workflowState, valid_from: o.validFrom, audit, counts,
    ...(o.geometryRules.makeValid === true ? { make_valid: true, allowed: o.geometryRules.types } : {})
  }))
  return {
    name: 'objects.insert',
    ctes: [NOW, `inp AS MATERIALIZED (
      SELECT x.*, g.geom, g.repair FROM jsonb_to_recordset(?::jsonb) AS x(n int, id uuid, type_id uuid, type_version int, public_id text, attributes jsonb,
        geometry jsonb, workflow_state text, valid_from timestamptz, audit jsonb, counts jsonb, make_valid boolean, allowed text[])
      CROSS JOIN LATERAL objects_geometry(x.geometry, x.make_valid, x.allowed, x.n) g
    )`, `t AS (
      SELECT * FROM object_types_lock_live(?, ARRAY(SELECT DISTINCT type_id FROM inp))
    )`, `o AS (
      INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, workflow_state, version, valid_from, created_at, updated_at)
      SELECT inp.id, ?, inp.type_id, inp.type_version, inp.public_id, inp.attributes, inp.geom,
        inp.workflow_state, 1, coalesce(date_trunc('milliseconds', inp.valid_from), now.t), now.t, now.t
      FROM inp JOIN t ON t.id = inp.type_id AND t.published_version = inp.type_version, now
      WHERE NOT EXISTS (SELECT 1 FROM inp i LEFT JOIN t c ON c.id = i.type_id AND c.published_version = i.type_version WHERE c.id IS NULL)
      ORDER BY inp.n
      RETURNING *
    )`, `v AS (
      ${VERSION_INSERT}
      SELECT o.id, 1, o.tenant_id, o.type_id, o.public_id, 'created', o.attributes, o.geom, o.workflow_state, o.created_at, o.updated_at, o.valid_from, o.created_at, ?::jsonb, inp.repair
      FROM o JOIN inp ON inp.id = o.id
    )`],
    select: `SELECT inp.n, j.body AS result, jsonb_build_object('audit', inp.audit, 'counts', inp.counts,
      'event', jsonb_build_object('type', 'object.created', 'aggregateType', 'object', 'aggregateId', o.id, 'payload', jsonb_build_object('object', j.body::jsonb))) AS change
      FROM o JOIN inp ON inp.id = o.id CROSS JOIN LATERAL (SELECT ${objectJson('o')} AS body) j`,
    bindings: [JSON.stringify(input), tenantId, tenantId, JSON.stringify(actor)]
  }
}

/**
 * lockObject, with the version its type publishes now (null: none, or the type is gone), in the
 * same round trip: a patch then takes the definition from the published-version cache when that
 * version is the one cached (lib/object-types publishedType).
 */
export async function lockObjectWithType (tx: Tx, tenantId: string, id: string): Promise<(ObjectRow & { type_published_version: number | null }) | null> {
  // Both tables filtered by the same tenant value, so that on a tenant-sharded cluster (Citus) the
  // locking statement is a one-shard router query (a join on o.tenant_id alone is refused there).
  const r = await prepared(tx, 'objects.lock+type', `SELECT ${COLS},
      (SELECT t.published_version FROM object_types t WHERE t.tenant_id = ? AND t.id = o.type_id AND t.deleted_at IS NULL) AS type_published_version
    FROM objects o WHERE o.id = ? AND o.tenant_id = ? AND o.deleted_at IS NULL FOR UPDATE OF o`, [tenantId, id, tenantId])
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
  /** The type's geometry settings, for a new geometry (absent: an invalid one is refused). */
  geometryRules?: GeometryRules
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
    g AS MATERIALIZED (SELECT * FROM objects_geometry(?::jsonb, ?, ?::text[], NULL)),
    closed AS (
      UPDATE object_versions SET tx_to = now.t, valid_to = vf.t FROM now, vf
      WHERE tenant_id = ? AND object_id = ? AND version = ?
    ),
    o AS (
      UPDATE objects SET attributes = ?::jsonb,
        geom = CASE WHEN ? THEN objects.geom ELSE g.geom END,
        workflow_state = ?, version = version + 1, valid_from = vf.t, updated_at = now.t
      FROM now, vf, g WHERE tenant_id = ? AND id = ?
      RETURNING objects.*
    ),
    v AS (
      ${VERSION_INSERT}
      SELECT o.id, o.version, o.tenant_id, o.type_id, o.public_id, ?, o.attributes, o.geom, o.workflow_state, o.created_at, o.updated_at, o.valid_from, o.updated_at, ?::jsonb, g.repair FROM o, g
    )
    SELECT ${COLS} FROM o`,
  [c.validFrom, current.valid_from, c.geometry == null ? null : JSON.stringify(c.geometry), c.geometryRules?.makeValid === true, c.geometryRules?.types ?? [],
    current.tenant_id, current.id, current.version, JSON.stringify(c.attributes), keepGeom,
    c.workflowState, current.tenant_id, current.id, c.operation, JSON.stringify(c.actor)])
  return r.rows[0]
}

/** Soft delete: the object leaves the current table's live set; a 'deleted' version closes history. */
export async function deleteObject (tx: Tx, current: ObjectRow, actor: object): Promise<ObjectRow> {
  const r = await prepared(tx, 'objects.delete', `
    WITH ${NOW},
    vf AS MATERIALIZED (SELECT greatest(now.t, ?::timestamptz) AS t FROM now),
    closed AS (
      UPDATE object_versions SET tx_to = now.t, valid_to = vf.t FROM now, vf WHERE tenant_id = ? AND object_id = ? AND version = ?
    ),
    o AS (
      UPDATE objects SET deleted_at = now.t, version = version + 1, updated_at = now.t FROM now WHERE tenant_id = ? AND id = ? RETURNING objects.*
    ),
    v AS (
      ${VERSION_INSERT}
      SELECT o.id, o.version, o.tenant_id, o.type_id, o.public_id, 'deleted', o.attributes, o.geom, o.workflow_state, o.created_at, o.updated_at, vf.t, o.updated_at, ?::jsonb, NULL FROM o, vf
    )
    SELECT ${COLS} FROM o`,
  [current.valid_from, current.tenant_id, current.id, current.version, current.tenant_id, current.id, JSON.stringify(actor)])
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

/** A stored version's columns under the names of the object source `o` (objectSource). */
export const VERSION_COLS = `object_id AS id, tenant_id, type_id, public_id, attributes, geom, workflow_state, version,
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

/** The object as the API shows it, as JSON text built by PostgreSQL, and its version (ETag); `id` must be a UUID. */
export async function findObjectJson (db: Queryable, tenantId: string, id: string, t: TimePoint): Promise<{ json: string, version: number } | null> {
  // The current read is the hot one: concurrent gets of a tenant share one prepared statement.
  if (t.asOf === undefined && t.validAt === undefined) return (await currentObjectJson(db, tenantId, id.toLowerCase())) ?? null
  const src = objectSource([tenantId], t)
  const r = await db.raw(`SELECT ${objectJson('o')}::text AS json, o.version FROM ${src.sql} o WHERE o.id = ?`, [...src.params, id])
  return r.rows[0] ?? null
}

// The current get's text, one per length of its key list (lib/db keyList): each id is looked up by
// the primary key, (tenant_id, id), in a LATERAL probe of its own. Its cost does not depend on the
// number of ids, so PostgreSQL keeps one generic plan per connection and length:
// - `o.id = ANY(<array parameter>)` was planned again on two calls of three on the bench's city
//   (the generic plan was costed for an array of ten, a custom plan for the few ids a batch
//   holds looked cheaper), and planning cost more than executing;
// - the deleted-row test is outside the probe, so no partial index (WHERE deleted_at IS NULL)
//   can serve it: with the tenant estimated at a row or two, such an index (tenant first, id
//   last) looked as cheap as the key and would have walked the tenant's whole range for each id.
// A GiST that leads with the tenant (not partial) can still tie with the key for a tenant the
// statistics put at one row: on a Citus shard the shard's index order then decides (a tenant with
// no rows reads nothing more; one whose statistics are stale could walk its range until ANALYZE).
// The tenant stays a plain equality, which a tenant-sharded cluster (Citus) routes to one shard.
const currentJsonTexts = new Map<number, string>()
function currentJsonText (size: number): string {
  let text = currentJsonTexts.get(size)
  if (text === undefined) {
    currentJsonTexts.set(size, text = `SELECT o.id::text AS id, ${objectJson('o')}::text AS json, o.version
      FROM (VALUES ${Array<string>(size).fill('(?::uuid)').join(', ')}) AS k(id)
      CROSS JOIN LATERAL (SELECT * FROM objects o WHERE o.tenant_id = ? AND o.id = k.id LIMIT 1) o
      WHERE o.deleted_at IS NULL`)
  }
  return text
}
/** Current objects of one tenant by id, the gets asked at once answered by one statement (lib/db `coalesced`). */
const currentObjectJson = coalesced<{ json: string, version: number }>(async (db, tenantId, ids) => {
  // The caller has checked that each id is a UUID.
  const list = keyList(ids)
  const r = await prepared(db, `objects.get-json-${list.size}`, currentJsonText(list.size), [...list.keys, tenantId])
  return new Map(r.rows.map((row: { id: string, json: string, version: number }) => [row.id, { json: row.json, version: row.version }]))
})

/** A sort key: its SQL over `o`, whether it can be null (nulls sort last) and is unique per tenant. */
export interface SortKey { expr: string, params: Bindings, nullable: boolean, unique: boolean }

export interface ListFilter { typeId?: string, sort: SortKey, order: 'asc' | 'desc', limit: number, offset: number }

function listWhere (tenantId: string, t: TimePoint, typeId: string | undefined): { from: string, params: Bindings } {
  const src = objectSource([tenantId], t)
  if (typeId === undefined) return { from: `${src.sql} o`, params: src.params }
  return { from: `${src.sql} o WHERE o.type_id = ?`, params: [...src.params, typeId] }
}

/**
 * A page, read one row beyond it so that `more` is exact. The ORDER BY matches an index of
 * migration 202611230201 in either direction (the index gives the page; no sort of the set).
 */
export function listStatement (tenantId: string, t: TimePoint, f: ListFilter): { sql: string, params: Bindings } {
  const w = listWhere(tenantId, t, f.typeId)
  const dir = f.order === 'desc' ? 'DESC' : 'ASC'
  const order = `${f.sort.expr} ${dir}${f.sort.nullable ? ' NULLS LAST' : ''}${f.sort.unique ? '' : `, o.id ${dir}`}`
  const page = pageClause(f.limit, f.offset)
  return { sql: `SELECT o.* FROM ${w.from} ORDER BY ${order} ${page.sql}`, params: [...w.params, ...f.sort.params, ...page.params] }
}

// The page sizes written into a list's text. A prepared statement with its LIMIT and OFFSET bound
// gets a generic plan costed for a tenth of the tenant's rows, far dearer than a custom plan of
// one page, so PostgreSQL plans such a statement again on every page (about as long as running
// it). A first page of a common size is written as `LIMIT n`: its generic plan is costed for one
// page, so PostgreSQL can keep it after five runs (it did on the bench's city; with the tenant
// bound, how the planner weighs an average tenant still decides). Other sizes and deeper pages
// stay bound (planned per page), so the number of texts per connection stays a few per sort.
const LITERAL_PAGE_SIZES = new Set([10, 20, 25, 50, 100, 200, 500, 1000])

function pageClause (limit: number, offset: number): { sql: string, params: Bindings } {
  if (offset === 0 && LITERAL_PAGE_SIZES.has(limit)) return { sql: `LIMIT ${limit + 1}`, params: [] }
  return { sql: 'LIMIT ? OFFSET ?', params: [limit + 1, offset] }
}

/**
 * The page's items as a JSON array built by PostgreSQL, their number, whether more follow, and,
 * when `total` is given (a one-row SELECT of column n, e.g. a counter), that total: one round trip.
 */
export async function listObjectsJson (db: Queryable, tenantId: string, t: TimePoint, f: ListFilter, total: Statement | null): Promise<{ items: string, count: number, more: boolean, total: number | null }> {
  const s = listStatement(tenantId, t, f)
  const text = `SELECT coalesce(json_agg(x.item ORDER BY x.rn) FILTER (WHERE x.rn <= ?), '[]')::text AS items,
      least(count(*), ?)::int AS count, count(*) > ? AS more, ${total === null ? 'NULL::bigint' : `(SELECT n FROM (${total.sql}) t)`} AS total
    FROM (SELECT ${objectJson('p', true)} AS item, row_number() OVER () AS rn FROM (${s.sql}) p) x`
  const bindings = [f.limit, f.limit, f.limit, ...(total?.bindings ?? []), ...s.params]
  // A current list's text is one of a few dozen (sort key, direction, type filter; attribute paths
  // are bound): prepared, it is planned once per connection instead of on every page (planning
  // cost more than running it on a loaded machine). Its plan is an index walk whatever the values.
  const current = t.asOf === undefined && t.validAt === undefined
  const name = statementName('objects.list', text)
  const r = await (current ? prepared(db, name, text, bindings) : db.raw(text, bindings))
  return r.rows[0]
}

/** The plan of a list page (diagnostics and the plan tests). */
export async function explainList (db: Queryable, tenantId: string, t: TimePoint, f: ListFilter): Promise<string> {
  const s = listStatement(tenantId, t, f)
  const r = await db.raw(`EXPLAIN ${s.sql}`, s.params)
  return r.rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n')
}

/** The size of a time-travel list: exact up to 10,000, estimated above. */
export function countObjects (db: Queryable, tenantId: string, t: TimePoint, typeId: string | undefined): Promise<Total> {
  const w = listWhere(tenantId, t, typeId)
  return boundedCount(db, `SELECT 1 FROM ${w.from}`, w.params)
}

export interface VersionRow extends ObjectRow {
  operation: 'created' | 'updated' | 'deleted' | 'transitioned'
  valid_to: Date | null
  tx_from: Date
  tx_to: Date | null
  actor: { sub: string, roles: string[] } | null
  geometry_repair: { reason: string, location: [number, number] | null } | null
}

export async function listVersions (db: Queryable, tenantId: string, id: string, limit: number, offset: number): Promise<{ rows: VersionRow[], total: number }> {
  const [rows, count] = await Promise.all([
    db.raw(`SELECT object_id AS id, tenant_id, type_id, public_id, attributes, ST_AsGeoJSON(geom)::json AS geometry, workflow_state,
        version, valid_from, created_at, updated_at, operation, valid_to, tx_from, tx_to, actor, geometry_repair
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
