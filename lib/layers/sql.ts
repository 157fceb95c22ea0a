import type { Queryable, Tx } from '../db.js'
import { SLUG_PATTERN } from './schema.js'

// Statements on the layers table. Every one filters by tenant and uses layers_pkey
// (tenant_id, id) or layers_tenant_slug (tenant_id, slug).

export interface LayerDefinition {
  filters?: {
    typeId?: string
    workflowState?: string
    attributes?: Record<string, string | number | boolean>
    bbox?: [number, number, number, number]
    query?: unknown[]
  }
  fields?: string[]
}

export interface LayerRow {
  tenant_id: string
  id: string
  slug: string
  name: string
  description: string | null
  definition: LayerDefinition
  cache_ttl_seconds: number | null
  version: number
  created_at: Date
  updated_at: Date
}

// STABLE, not clock_timestamp(): Citus refuses VOLATILE functions in UPDATE statements.
const NOW = "date_trunc('milliseconds', statement_timestamp())"

export async function insertLayer (tx: Tx, r: Omit<LayerRow, 'version' | 'created_at' | 'updated_at'>): Promise<LayerRow> {
  const res = await tx.raw(`
    INSERT INTO layers (tenant_id, id, slug, name, description, definition, cache_ttl_seconds, version, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?::jsonb, ?, 1, ${NOW}, ${NOW}) RETURNING *`,
  [r.tenant_id, r.id, r.slug, r.name, r.description, JSON.stringify(r.definition), r.cache_ttl_seconds])
  return res.rows[0]
}

const SLUG = new RegExp(SLUG_PATTERN)

/**
 * By id (when `key` is a UUID) or by slug. A key that is no slug names no layer and is not sent
 * (a NUL in it would fail in Postgres as a 400 about storing text, where the answer is a 404).
 */
export async function findLayer (db: Queryable, tenantId: string, key: string, byId: boolean, lock = false): Promise<LayerRow | null> {
  if (!byId && !SLUG.test(key)) return null
  const res = await db.raw(`SELECT * FROM layers WHERE tenant_id = ? AND ${byId ? 'id = ?::uuid' : 'slug = ?'}${lock ? ' FOR UPDATE' : ''}`, [tenantId, key])
  return res.rows[0] ?? null
}

export async function updateLayer (tx: Tx, tenantId: string, id: string, r: Pick<LayerRow, 'slug' | 'name' | 'description' | 'definition' | 'cache_ttl_seconds'>): Promise<LayerRow> {
  const res = await tx.raw(`
    UPDATE layers SET slug = ?, name = ?, description = ?, definition = ?::jsonb, cache_ttl_seconds = ?, version = version + 1, updated_at = ${NOW}
    WHERE tenant_id = ? AND id = ? RETURNING *`,
  [r.slug, r.name, r.description, JSON.stringify(r.definition), r.cache_ttl_seconds, tenantId, id])
  return res.rows[0]
}

export async function deleteLayer (tx: Tx, tenantId: string, id: string): Promise<void> {
  await tx.raw('DELETE FROM layers WHERE tenant_id = ? AND id = ?', [tenantId, id])
}

export async function listLayers (db: Queryable, tenantId: string, limit: number, offset: number): Promise<{ rows: LayerRow[], total: number }> {
  const [rows, count] = await Promise.all([
    db.raw('SELECT * FROM layers WHERE tenant_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?', [tenantId, limit, offset]),
    db.raw('SELECT count(*)::int AS n FROM layers WHERE tenant_id = ?', [tenantId])
  ])
  return { rows: rows.rows, total: count.rows[0].n }
}

/** Layers whose selection may hold objects of any of `typeIds`: those of these types and those of any type. */
export async function layersForTypes (db: Queryable, tenantId: string, typeIds: string[]): Promise<Array<{ id: string }>> {
  const res = await db.raw(`SELECT id FROM layers WHERE tenant_id = ?
    AND (definition #>> '{filters,typeId}' IS NULL OR definition #>> '{filters,typeId}' = ANY(?::text[]))`, [tenantId, typeIds])
  return res.rows
}
