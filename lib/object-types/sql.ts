import { INVALID_GEOMETRY, prepared, translatePgError, type Bindings, type Queryable, type Tx } from '../db.js'
import type { AppError } from '../errors.js'
import type { TypeDefinition } from './definition.js'
import * as versioning from '../versioning/index.js'

export interface TypeRow {
  id: string
  tenant_id: string
  key: string
  latest_version: number
  published_version: number | null
  created_at: Date
  updated_at: Date
}

export type VersionRow = versioning.VersionRow<TypeDefinition>

/** The type's versions (lib/versioning): draft -> sandbox -> published. */
export const versions = versioning.versionStore<TypeDefinition>({ parents: 'object_types', versions: 'object_type_versions', parentKey: 'type_id' })

export type TypeWithLatest = TypeRow & { latest: VersionRow }

const LATEST = `
  SELECT t.*, to_jsonb(v) AS latest
  FROM object_types t
  JOIN object_type_versions v ON v.tenant_id = t.tenant_id AND v.type_id = t.id AND v.version = t.latest_version`

function revive (row: TypeRow & { latest: Record<string, unknown> }): TypeWithLatest {
  const l = row.latest
  return {
    ...row,
    latest: {
      version: l.version as number,
      status: l.status as VersionRow['status'],
      definition: l.definition as TypeDefinition,
      created_at: new Date(l.created_at as string),
      created_by: l.created_by as string | null,
      sandbox_at: l.sandbox_at ? new Date(l.sandbox_at as string) : null,
      published_at: l.published_at ? new Date(l.published_at as string) : null
    }
  }
}

export async function findType (db: Queryable, tenantId: string, id: string, lock = false): Promise<TypeWithLatest | null> {
  if (lock) await db.raw('SELECT 1 FROM object_types WHERE id = ? AND tenant_id = ? FOR UPDATE', [id, tenantId])
  const r = await db.raw(`${LATEST} WHERE t.id = ? AND t.tenant_id = ? AND t.deleted_at IS NULL`, [id, tenantId])
  return r.rows[0] ? revive(r.rows[0]) : null
}

export async function listTypes (db: Queryable, tenantId: string, f: { limit: number, offset: number, status?: string, key?: string }): Promise<{ rows: TypeWithLatest[], total: number }> {
  const where = ['t.tenant_id = ?', 't.deleted_at IS NULL']
  const params: Bindings = [tenantId]
  if (f.status !== undefined) { where.push('v.status = ?'); params.push(f.status) }
  if (f.key !== undefined) { where.push('t.key = ?'); params.push(f.key) }
  const cond = where.join(' AND ')
  const [rows, count] = await Promise.all([
    db.raw(`${LATEST} WHERE ${cond} ORDER BY t.created_at, t.id LIMIT ? OFFSET ?`, [...params, f.limit, f.offset]),
    db.raw(`SELECT count(*)::int AS n FROM object_types t JOIN object_type_versions v ON v.tenant_id = t.tenant_id AND v.type_id = t.id AND v.version = t.latest_version WHERE ${cond}`, params)
  ])
  return { rows: rows.rows.map(revive), total: count.rows[0].n }
}

export async function insertType (tx: Tx, tenantId: string, key: string): Promise<TypeRow> {
  const [row] = await tx('object_types').insert({ tenant_id: tenantId, key }).returning('*')
  return row
}

export async function softDeleteType (tx: Tx, tenantId: string, id: string): Promise<void> {
  await tx('object_types').where({ tenant_id: tenantId, id }).update({ deleted_at: tx.fn.now(), updated_at: tx.fn.now() })
}

/** Whether `id` is a type of the tenant that is not deleted (any status), by the primary key. */
export async function typeExists (db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const r = await db.raw('SELECT 1 FROM object_types WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL', [id, tenantId])
  return r.rows.length > 0
}

export async function countLiveObjects (db: Queryable, tenantId: string, typeId: string): Promise<number> {
  const r = await db.raw('SELECT count(*)::int AS n FROM objects WHERE tenant_id = ? AND type_id = ? AND deleted_at IS NULL', [tenantId, typeId])
  return r.rows[0].n
}

/**
 * The published definition objects validate against; null when the type has none (or is gone).
 * Object creates read it through the cache in published-cache.ts and lock the type themselves
 * (lib/objects insertObject).
 */
export async function findPublished (db: Queryable, tenantId: string, typeId: string): Promise<{ key: string, version: number, definition: TypeDefinition } | null> {
  const r = await prepared(db, 'object-types.published', `
    SELECT t.key, v.version, v.definition
    FROM object_types t JOIN object_type_versions v ON v.tenant_id = t.tenant_id AND v.type_id = t.id AND v.version = t.published_version
    WHERE t.id = ? AND t.tenant_id = ? AND t.deleted_at IS NULL`, [typeId, tenantId])
  return r.rows[0] ?? null
}

/** Live types among `ids`, each with its latest version (one statement). */
export async function findTypes (db: Queryable, tenantId: string, ids: string[]): Promise<TypeWithLatest[]> {
  const r = await db.raw(`${LATEST} WHERE t.id = ANY(?::uuid[]) AND t.tenant_id = ? AND t.deleted_at IS NULL`, [ids, tenantId])
  return r.rows.map(revive)
}

/**
 * What an object write would say of this geometry under these settings: the 400 objects_geometry
 * (migration 202611280001, the write's own check) raises, or null when it would be stored.
 */
export async function geometryRefusal (db: Queryable, geometryJson: string, rules: TypeDefinition['geometry']): Promise<AppError | null> {
  try {
    await db.raw('SELECT 1 FROM objects_geometry(?::jsonb, ?, ?::text[], NULL)', [geometryJson, rules.makeValid === true, rules.types])
    return null
  } catch (err) {
    if ((err as { code?: string }).code !== INVALID_GEOMETRY) throw err
    return translatePgError(err) as AppError
  }
}
