import type { Db, Queryable, Statement } from '../db.js'
import * as sql from './sql.js'

// Exact per-tenant counters kept in the writing transaction (README): live objects per type,
// changes per type (layer cache invalidation), and whatever quotas count.

export type { CounterDelta } from './sql.js'

/** The counters the core writes. Buckets of both are object type ids. */
export const OBJECTS = 'objects'
export const OBJECT_CHANGES = 'object_changes'

// Live records of other resources (bucket ''): +1 when one is created or restored, -1 when it is
// deleted, recorded by the owning module in its Change.counts. The license limits
// relation_count, object_type_count, layer_count and automation_rule_count read them.
export const RELATIONS = 'relations'
export const OBJECT_TYPES = 'object_types'
export const LAYERS = 'layers'
export const AUTOMATION_RULES = 'automation_rules'
// Per calendar month (bucket = monthBucket()): recorded by lib/license for the writes and query
// runs that count against workflow_run_count and query_count.
export const WORKFLOW_RUNS = 'workflow_runs'
export const QUERIES = 'queries'

/** The UTC calendar month of `at` as a bucket, 'YYYY-MM'. */
export function monthBucket (at: Date): string {
  return at.toISOString().slice(0, 7)
}

/** The statement the write pipeline runs inside the write's transaction, or null for none. */
export function addStatement (tenantId: string, deltas: sql.CounterDelta[]): Statement | null {
  const nonZero = deltas.filter(d => d.delta !== 0)
  return nonZero.length === 0 ? null : sql.addStatement(tenantId, nonZero)
}

/** The same deltas read from rows `e(v)` of the statement they are folded into (lib/pipeline). */
export function addFromStatement (tenantId: string, rows: string): Statement {
  return sql.addFromStatement(tenantId, rows)
}

/** The counter's exact value in `db`'s snapshot: over all buckets, or over the given ones. */
export function total (db: Queryable, tenantId: string, counter: string, buckets: string[] | null = null): Promise<number> {
  return sql.sum(db, tenantId, counter, buckets)
}

/** The same value as a statement, for a reader that embeds it in its own (one round trip). */
export function totalStatement (tenantId: string, counter: string, buckets: string[] | null = null): Statement {
  return sql.sumStatement(tenantId, counter, buckets)
}

export function totalsByBucket (db: Queryable, tenantId: string, counter: string): Promise<Map<string, number>> {
  return sql.sumsByBucket(db, tenantId, counter)
}

/**
 * Folds groups of more than `minRows` rows (of all tenants, or one); run by the worker. Each
 * tenant is folded in a transaction of its own; a second folder (or a write folding the tenant's
 * quota counter, lib/license) finds the lock taken and skips.
 */
export async function fold (db: Db, opts: { minRows?: number, maxGroups?: number, tenantId?: string } = {}): Promise<number> {
  const minRows = opts.minRows ?? 16
  const maxGroups = opts.maxGroups ?? 1000
  const tenants = opts.tenantId === undefined ? await sql.tenantsToFold(db, minRows, maxGroups) : [opts.tenantId]
  let folded = 0
  for (const tenantId of tenants) {
    folded += await db.transaction(async tx => await sql.tryFoldLock(tx, tenantId) ? sql.foldTenant(tx, tenantId, minRows, maxGroups) : 0)
  }
  return folded
}

/** VACUUM counter_deltas: folds delete rows, and sums read every deleted one until it is gone. */
export function vacuum (db: Db): Promise<void> {
  return sql.vacuum(db)
}
