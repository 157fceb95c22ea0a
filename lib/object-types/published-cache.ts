import type { Queryable } from '../db.js'
import type { TypeDefinition } from './definition.js'
import { findPublished } from './sql.js'

export interface Published { key: string, version: number, definition: TypeDefinition }

/**
 * Published type definitions, kept in process for object creates. A published version never
 * changes, so an entry can only be stale by naming an older version than the type now
 * publishes, or a type since deleted. Hazard: a caller must therefore make its write conditional
 * on the version (lib/objects insertObject does, under a KEY SHARE lock on the type row) and
 * call `publishedType(..., { fresh: true })` when the condition fails.
 */
const cache = new Map<string, Published & { tenantId: string }>()
const MAX_ENTRIES = 2000

export async function publishedType (db: Queryable, tenantId: string, typeId: string, opts: { fresh?: boolean } = {}): Promise<Published | null> {
  const hit = opts.fresh === true ? undefined : cache.get(typeId)
  if (hit !== undefined && hit.tenantId === tenantId) return hit
  const p = await findPublished(db, tenantId, typeId)
  if (p === null) cache.delete(typeId)
  else {
    if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as string)
    cache.set(typeId, { ...p, tenantId })
  }
  return p
}

/** Drops a type's entry (its publish state changed in this process). */
export function forgetPublished (typeId: string): void {
  cache.delete(typeId)
}
