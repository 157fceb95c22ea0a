import type { Queryable } from '../db.js'
import * as sql from './sql.js'

// Tenants come into being on first use (docs/behaviour.md "General"). `known` holds tenants whose row
// this process has seen committed; a miss costs one idempotent insert in the write's transaction.
const known = new Set<string>()

export async function ensureTenant (db: Queryable, tenantId: string): Promise<void> {
  if (known.has(tenantId)) return
  await sql.insertTenant(db, tenantId)
}

/** Called after COMMIT: only then is the tenant row certain to exist. */
export function rememberTenant (tenantId: string): void {
  known.add(tenantId)
}

/** Whether this process has seen the tenant's row committed (a write needs no ensureTenant). */
export function isKnownTenant (tenantId: string): boolean {
  return known.has(tenantId)
}

/** Every tenant id, in order: for work that goes tenant by tenant (retention jobs). */
export function allTenants (db: Queryable): Promise<string[]> {
  return sql.tenantIds(db)
}
