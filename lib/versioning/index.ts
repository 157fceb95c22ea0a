import type { Tx } from '../db.js'
import { AppError } from '../errors.js'
import { Timestamp, Uuid } from '../schemas.js'
import type { VersionRow, VersionStatus, VersionStore } from './sql.js'

export { versionStore, type VersionRow, type VersionStatus, type VersionStore, type VersionTables } from './sql.js'

/**
 * The draft -> sandbox -> published lifecycle shared by object types and reusable rules
 * (docs/behaviour.md "Object types and the schema registry"). An entity row (`object_types`, `rules`)
 * names its latest and published versions; its versions live in a sibling table keyed by
 * (parent id, version). Invariants: a published version never changes (an edit makes a new
 * draft N+1), and a version only moves forward.
 */

export interface Latest { id: string, version: number, status: VersionStatus }

/** Saves an edit: in place while the latest version is draft or sandbox, else as draft N+1. Returns the version written. */
export async function saveEdit<D> (store: VersionStore<D>, tx: Tx, tenantId: string, latest: Latest, definition: D, createdBy: string): Promise<number> {
  if (latest.status !== 'published') {
    await store.updateDefinition(tx, tenantId, latest.id, latest.version, definition)
    await store.touchParent(tx, tenantId, latest.id, {})
    return latest.version
  }
  const next = latest.version + 1
  await store.insert(tx, tenantId, latest.id, next, definition, createdBy)
  await store.touchParent(tx, tenantId, latest.id, { latest_version: next })
  return next
}

const ORDER: Record<VersionStatus, number> = { draft: 0, sandbox: 1, published: 2 }

/** Moves the latest version forward to `to`; backwards or in place is INVALID_TRANSITION. */
export async function advance<D> (store: VersionStore<D>, tx: Tx, tenantId: string, what: string, latest: Latest, to: 'sandbox' | 'published'): Promise<void> {
  if (ORDER[to] <= ORDER[latest.status]) {
    throw new AppError('INVALID_TRANSITION', `${what} version ${latest.version} is ${latest.status}; it can only move forward (draft -> sandbox -> published)`,
      { from: latest.status, to, version: latest.version })
  }
  await store.setStatus(tx, tenantId, latest.id, latest.version, to)
  await store.touchParent(tx, tenantId, latest.id, to === 'published' ? { published_version: latest.version } : {})
}

/** A schema-registry entry; `present` shapes the stored definition for the API. */
export function toRegistryVersion<D> (v: VersionRow<D>, present: (d: D) => unknown = d => d) {
  return {
    version: v.version,
    status: v.status,
    definition: present(v.definition),
    createdAt: v.created_at.toISOString(),
    createdBy: v.created_by,
    sandboxAt: v.sandbox_at?.toISOString() ?? null,
    publishedAt: v.published_at?.toISOString() ?? null
  }
}

export const PublishBody = {
  type: 'object',
  additionalProperties: false,
  properties: { to: { type: 'string', enum: ['sandbox', 'published'], default: 'published' } }
} as const

export const SchemaRegistryBody = {
  type: 'object',
  required: ['entityType', 'entityId', 'versions'],
  properties: {
    entityType: { type: 'string', enum: ['object-types', 'workflows', 'rules', 'automation-rules'] },
    entityId: Uuid,
    versions: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          version: { type: 'integer' },
          status: { type: 'string' },
          definition: { type: 'object' },
          createdAt: Timestamp,
          createdBy: { type: 'string', nullable: true },
          sandboxAt: { ...Timestamp, nullable: true },
          publishedAt: { ...Timestamp, nullable: true }
        }
      }
    }
  }
} as const
