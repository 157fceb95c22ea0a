import type { Queryable, Tx } from '../db.js'

// The version tables of a versioned entity kind (README): one store per kind, over its two tables.

export type VersionStatus = 'draft' | 'sandbox' | 'published'

export interface VersionRow<D> {
  version: number
  status: VersionStatus
  definition: D
  created_at: Date
  created_by: string | null
  sandbox_at: Date | null
  published_at: Date | null
}

/** Where one entity kind keeps its versions: e.g. rules / rule_versions / rule_id. */
export interface VersionTables { parents: string, versions: string, parentKey: string }

const NOW_MS = "date_trunc('milliseconds', now())"

export function versionStore<D> (t: VersionTables) {
  // Every key leads with the tenant (versions are keyed (tenant_id, parent id, version)).
  const key = (tenantId: string, parentId: string, version?: number) => version === undefined
    ? { tenant_id: tenantId, [t.parentKey]: parentId }
    : { tenant_id: tenantId, [t.parentKey]: parentId, version }
  return {
    async insert (tx: Tx, tenantId: string, parentId: string, version: number, definition: D, createdBy: string): Promise<void> {
      await tx(t.versions).insert({ ...key(tenantId, parentId, version), status: 'draft', definition: JSON.stringify(definition), created_by: createdBy })
    },
    async updateDefinition (tx: Tx, tenantId: string, parentId: string, version: number, definition: D): Promise<void> {
      await tx(t.versions).where(key(tenantId, parentId, version)).update({ definition: JSON.stringify(definition) })
    },
    /** Moving straight from draft to published stamps sandbox_at too: both steps are recorded. */
    async setStatus (tx: Tx, tenantId: string, parentId: string, version: number, status: 'sandbox' | 'published'): Promise<void> {
      const now = tx.raw(NOW_MS)
      await tx(t.versions).where(key(tenantId, parentId, version)).update({
        status,
        // least() keeps an earlier stamp (NULLs are ignored); Citus refuses coalesce() over now().
        sandbox_at: tx.raw('least(sandbox_at, ?)', [now]),
        ...(status === 'published' ? { published_at: now } : {})
      })
    },
    async touchParent (tx: Tx, tenantId: string, parentId: string, patch: { latest_version?: number, published_version?: number }): Promise<void> {
      await tx(t.parents).where({ tenant_id: tenantId, id: parentId }).update({ ...patch, updated_at: tx.raw(NOW_MS) })
    },
    async list (db: Queryable, tenantId: string, parentId: string): Promise<Array<VersionRow<D>>> {
      return db(t.versions).where(key(tenantId, parentId)).orderBy('version').select('*')
    },
    async find (db: Queryable, tenantId: string, parentId: string, version: number): Promise<VersionRow<D> | null> {
      return (await db(t.versions).where(key(tenantId, parentId, version)).first()) ?? null
    }
  }
}

export type VersionStore<D> = ReturnType<typeof versionStore<D>>
