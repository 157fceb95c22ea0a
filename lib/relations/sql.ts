import type { Bindings, Queryable, Tx } from '../db.js'

export interface RelationRow {
  id: string
  tenant_id: string
  from_object_id: string
  to_object_id: string
  relation_type: string
  metadata: Record<string, unknown>
  inherits_geometry: boolean
  created_at: Date
  updated_at: Date
  deleted_at: Date | null
}

const COLS = `id, tenant_id, from_object_id, to_object_id, relation_type, metadata, inherits_geometry,
  created_at, updated_at, deleted_at`

// One clock read per statement, truncated to milliseconds (docs/behaviour.md "General":
// timestamps). STABLE, not clock_timestamp(): Citus refuses VOLATILE functions in UPDATE statements
// (lib/objects sql.ts).
const NOW = "date_trunc('milliseconds', statement_timestamp())"

export interface NewRelation {
  id: string
  tenantId: string
  fromObjectId: string
  toObjectId: string
  relationType: string
  metadata: Record<string, unknown>
  inheritsGeometry: boolean
}

/** Inserts unless an identical active link exists (relations_active_link); null then. */
export async function insertRelation (tx: Tx, n: NewRelation): Promise<RelationRow | null> {
  const r = await tx.raw(`
    INSERT INTO relations (id, tenant_id, from_object_id, to_object_id, relation_type, metadata, inherits_geometry, created_at, updated_at)
    SELECT ?, ?, ?, ?, ?, ?::jsonb, ?, t, t FROM (SELECT ${NOW} AS t) now
    ON CONFLICT (tenant_id, from_object_id, to_object_id, relation_type) WHERE deleted_at IS NULL DO NOTHING
    RETURNING ${COLS}`,
  [n.id, n.tenantId, n.fromObjectId, n.toObjectId, n.relationType, JSON.stringify(n.metadata), n.inheritsGeometry])
  return r.rows[0] ?? null
}

/** The active link with the same (from, to, type), other than `exceptId`. */
export async function findActiveTwin (db: Queryable, tenantId: string, from: string, to: string, type: string, exceptId: string | null): Promise<string | null> {
  const r = await db.raw(`SELECT id FROM relations WHERE tenant_id = ? AND from_object_id = ? AND to_object_id = ?
    AND relation_type = ? AND deleted_at IS NULL AND id IS DISTINCT FROM ?::uuid`, [tenantId, from, to, type, exceptId])
  return r.rows[0]?.id ?? null
}

/** The relation (deleted or not), locked until the transaction ends. */
export async function lockRelation (tx: Tx, tenantId: string, id: string): Promise<RelationRow | null> {
  const r = await tx.raw(`SELECT ${COLS} FROM relations WHERE tenant_id = ? AND id = ? FOR UPDATE`, [tenantId, id])
  return r.rows[0] ?? null
}

export async function findRelation (db: Queryable, tenantId: string, id: string): Promise<RelationRow | null> {
  const r = await db.raw(`SELECT ${COLS} FROM relations WHERE tenant_id = ? AND id = ?`, [tenantId, id])
  return r.rows[0] ?? null
}

export interface RelationUpdate { relationType: string, metadata: Record<string, unknown>, inheritsGeometry: boolean }

export async function updateRelation (tx: Tx, tenantId: string, id: string, u: RelationUpdate): Promise<RelationRow> {
  const r = await tx.raw(`UPDATE relations SET relation_type = ?, metadata = ?::jsonb, inherits_geometry = ?, updated_at = ${NOW}
    WHERE tenant_id = ? AND id = ? RETURNING ${COLS}`, [u.relationType, JSON.stringify(u.metadata), u.inheritsGeometry, tenantId, id])
  return r.rows[0]
}

/** Soft delete (deleted = true) or restore (false). */
export async function setDeleted (tx: Tx, tenantId: string, id: string, deleted: boolean): Promise<RelationRow> {
  // Two texts rather than CASE WHEN ? THEN now: Citus refuses a non-IMMUTABLE function in a CASE of an UPDATE.
  const r = await tx.raw(`UPDATE relations SET deleted_at = ${deleted ? NOW : 'NULL'}, updated_at = ${NOW}
    WHERE tenant_id = ? AND id = ? RETURNING ${COLS}`, [tenantId, id])
  return r.rows[0]
}

export interface ListFilter {
  fromObjectId?: string
  toObjectId?: string
  /** Links touching this object, in the given direction. */
  objectId?: string
  direction?: 'outgoing' | 'incoming' | 'all'
  relationType?: string
  /** path -> text the JSON scalar at that path must have. */
  metadata: Array<{ path: string[], value: string }>
  includeDeleted: boolean
  limit: number
  offset: number
}

function whereClause (tenantId: string, f: ListFilter): { sql: string, params: Bindings } {
  const where = ['r.tenant_id = ?']
  const params: Bindings = [tenantId]
  const add = (cond: string, ...values: Bindings) => { where.push(cond); params.push(...values) }
  if (f.fromObjectId !== undefined) add('r.from_object_id = ?', f.fromObjectId)
  if (f.toObjectId !== undefined) add('r.to_object_id = ?', f.toObjectId)
  if (f.objectId !== undefined) {
    if (f.direction === 'outgoing') add('r.from_object_id = ?', f.objectId)
    else if (f.direction === 'incoming') add('r.to_object_id = ?', f.objectId)
    else add('(r.from_object_id = ? OR r.to_object_id = ?)', f.objectId, f.objectId)
  }
  if (f.relationType !== undefined) add('r.relation_type = ?', f.relationType)
  // "matches the JSON scalar's text" (docs/behaviour.md "Relations"): objects and arrays never
  // match, nor does a missing key (jsonb_typeof is NULL there). The text of JSON null is `null`,
  // but #>> gives SQL NULL for it, hence the coalesce (which only a JSON null reaches). A filter on
  // the row like the others: no index of its own, the plan keeps the tenant's.
  for (const m of f.metadata) {
    add("(jsonb_typeof(r.metadata #> ?::text[]) NOT IN ('object', 'array') AND coalesce(r.metadata #>> ?::text[], 'null') = ?)", m.path, m.path, m.value)
  }
  if (!f.includeDeleted) where.push('r.deleted_at IS NULL')
  return { sql: where.join(' AND '), params }
}

export async function listRelations (db: Queryable, tenantId: string, f: ListFilter): Promise<{ rows: RelationRow[], total: number }> {
  const w = whereClause(tenantId, f)
  const [rows, count] = await Promise.all([
    db.raw(`SELECT ${COLS} FROM relations r WHERE ${w.sql} ORDER BY r.created_at, r.id LIMIT ? OFFSET ?`, [...w.params, f.limit, f.offset]),
    db.raw(`SELECT count(*)::int AS n FROM relations r WHERE ${w.sql}`, w.params)
  ])
  return { rows: rows.rows, total: count.rows[0].n }
}

export interface PerObjectFilter { direction: 'outgoing' | 'incoming' | 'all', relationType?: string, includeDeleted: boolean, limit: number }

/**
 * The first `limit` relations of each of `objectIds` (by createdAt, id), in ONE statement: a
 * lateral join per object id over relations_from / relations_to. Each row carries the object
 * it was found for (a link between two listed objects appears once for each).
 */
export async function relationsOfObjects (db: Queryable, tenantId: string, objectIds: string[], f: PerObjectFilter): Promise<Array<RelationRow & { for_object_id: string }>> {
  const ends = f.direction === 'outgoing' ? 'r.from_object_id = ids.id'
    : f.direction === 'incoming' ? 'r.to_object_id = ids.id'
      : '(r.from_object_id = ids.id OR r.to_object_id = ids.id)'
  const r = await db.raw(`
    SELECT ids.id AS for_object_id, x.* FROM unnest(?::uuid[]) AS ids(id)
    CROSS JOIN LATERAL (
      SELECT ${COLS} FROM relations r
      WHERE r.tenant_id = ? AND ${ends} AND (?::text IS NULL OR r.relation_type = ?) AND (? OR r.deleted_at IS NULL)
      ORDER BY r.created_at, r.id LIMIT ?
    ) x`, [objectIds, tenantId, f.relationType ?? null, f.relationType ?? null, f.includeDeleted, f.limit])
  return r.rows
}
