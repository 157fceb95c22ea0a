import type { Db } from '../db.js'
import { runStatements } from '../db.js'
import * as counters from '../counters/index.js'

// Query runs of tenants without a query_count limit are counted for GET /v1/license only, so
// they need not cost every run a committed write (a WAL flush) of its own: they gather here per
// (database, tenant, month) and go out together in one statement, at most a second later (and
// before any usage is read or a limited run counted in this process). Hazard: a process that
// dies loses its last second of such counts; a limit never depends on them being there.

const pending = new Map<Db, Map<string, number>>()
let timer: NodeJS.Timeout | null = null

export function bufferQueryRun (db: Db, tenantId: string, bucket: string, n = 1): void {
  const byKey = pending.get(db) ?? new Map<string, number>()
  pending.set(db, byKey)
  const key = JSON.stringify([tenantId, bucket])
  byKey.set(key, (byKey.get(key) ?? 0) + n)
  timer ??= setTimeout(() => {
    timer = null
    for (const d of [...pending.keys()]) flushQueryRuns(d).catch(() => { /* gathered again for the next flush */ })
  }, 1000).unref()
}

/** Writes `db`'s gathered counts in one statement; on failure they stay gathered. */
export async function flushQueryRuns (db: Db): Promise<void> {
  const byKey = pending.get(db)
  if (byKey === undefined || byKey.size === 0) return
  pending.delete(db)
  const byTenant = new Map<string, counters.CounterDelta[]>()
  for (const [key, n] of byKey) {
    const [tenantId, bucket] = JSON.parse(key) as [string, string]
    byTenant.set(tenantId, [...(byTenant.get(tenantId) ?? []), { counter: counters.QUERIES, bucket, delta: n }])
  }
  try {
    await runStatements(db, [...byTenant].map(([t, deltas]) => counters.addStatement(t, deltas)!))
  } catch (err) {
    for (const [key, n] of byKey) {
      const [tenantId, bucket] = JSON.parse(key) as [string, string]
      bufferQueryRun(db, tenantId, bucket, n)
    }
    throw err
  }
}
