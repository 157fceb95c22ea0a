import type { Queryable } from '../db.js'
import * as sql from './sql.js'
import * as tenants from '../tenants/index.js'

const HOUR_MS = 3_600_000
const BATCH = 5000

/**
 * Retention (the outbox.prune job, hourly): events delivered more than `retentionHours` ago are
 * deleted, tenant by tenant, in batches of the tenant's oldest positions. Nothing reads an event
 * once it is delivered (a run keeps its own copy of its trigger), so without this the table, and
 * every scan of its indexes, only grows. Undelivered events stay until they are delivered.
 * Returns how many were deleted.
 */
export async function pruneDelivered (db: Queryable, retentionHours: number, now = new Date()): Promise<number> {
  const before = new Date(now.getTime() - retentionHours * HOUR_MS)
  let pruned = 0
  for (const tenantId of await tenants.allTenants(db)) {
    for (let after = '0'; ;) {
      const b = await sql.pruneDelivered(db, tenantId, after, before, BATCH)
      pruned += b.pruned
      if (b.read < BATCH || b.reached || b.last === null) break
      after = b.last
    }
  }
  return pruned
}
