import type { Queryable, Statement } from '../db.js'

export interface CounterDelta {
  counter: string
  /** A sub-key of the counter (an object type id, a month 'YYYY-MM'); '' when it has none. */
  bucket?: string
  delta: number
}

/** Adds the deltas as new rows (never an update of a shared row: no lock between writers). */
export function addStatement (tenantId: string, deltas: CounterDelta[]): Statement {
  return { sql: insertDeltas('jsonb_array_elements(?::jsonb) AS e(v)'), name: 'counters.add', bindings: [tenantId, JSON.stringify(deltas)] }
}

/** The same insert from rows `e(v)` of another statement, v a CounterDelta as jsonb. */
export function addFromStatement (tenantId: string, rows: string): Statement {
  return { sql: insertDeltas(rows), bindings: [tenantId] }
}

function insertDeltas (rows: string): string {
  return `INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
    SELECT ?, e.v->>'counter', coalesce(e.v->>'bucket', ''), (e.v->>'delta')::bigint FROM ${rows} WHERE (e.v->>'delta')::bigint <> 0`
}

// Index-only scans of counter_deltas_pkey (tenant_id, counter, bucket, id) INCLUDE (delta).

/** A SELECT of one row, column n: the counter's value (to run, or to embed as a scalar subquery). */
export function sumStatement (tenantId: string, counter: string, buckets: string[] | null): Statement {
  return buckets === null
    ? { sql: 'SELECT coalesce(sum(delta), 0)::bigint AS n FROM counter_deltas WHERE tenant_id = ? AND counter = ?', bindings: [tenantId, counter] }
    : { sql: 'SELECT coalesce(sum(delta), 0)::bigint AS n FROM counter_deltas WHERE tenant_id = ? AND counter = ? AND bucket = ANY(?::text[])', bindings: [tenantId, counter, buckets] }
}

export async function sum (db: Queryable, tenantId: string, counter: string, buckets: string[] | null): Promise<number> {
  const s = sumStatement(tenantId, counter, buckets)
  const r = await db.raw(s.sql, s.bindings)
  return Number(r.rows[0].n)
}

export async function sumsByBucket (db: Queryable, tenantId: string, counter: string): Promise<Map<string, number>> {
  const r = await db.raw('SELECT bucket, sum(delta)::bigint AS n FROM counter_deltas WHERE tenant_id = ? AND counter = ? GROUP BY bucket', [tenantId, counter])
  return new Map(r.rows.map((row: { bucket: string, n: number }) => [row.bucket, Number(row.n)]))
}

/** Tenants with a group (counter, bucket) of more than `minRows` rows. */
export async function tenantsToFold (db: Queryable, minRows: number, limit: number): Promise<string[]> {
  const r = await db.raw(`SELECT DISTINCT tenant_id FROM (
      SELECT tenant_id FROM counter_deltas GROUP BY tenant_id, counter, bucket HAVING count(*) > ?) g LIMIT ?`, [minRows, limit])
  return r.rows.map((x: { tenant_id: string }) => x.tenant_id)
}

/**
 * Folds every group (counter, bucket) of one tenant holding more than `minRows` rows into one
 * row. Only committed rows are seen and deleted, and the folded row is inserted in the same
 * statement, so every snapshot sees either the old rows or their sum: totals never move. Returns
 * the groups folded. One statement on one tenant: a router query on a tenant-sharded cluster.
 * The groups are MATERIALIZED: inlined, a plan made on stale statistics (a table never analyzed
 * estimates the tenant's rows at a few hundred) could join them as the inner side of a nested
 * loop and aggregate the tenant's rows again for each of its rows (quadratic in the tenant's rows).
 */
export async function foldTenant (tx: Queryable, tenantId: string, minRows: number, maxGroups: number): Promise<number> {
  const r = await tx.raw(`
    WITH g AS MATERIALIZED (
      SELECT counter, bucket FROM counter_deltas WHERE tenant_id = ?
      GROUP BY 1, 2 HAVING count(*) > ? LIMIT ?
    ),
    gone AS (
      DELETE FROM counter_deltas c USING g
      WHERE c.tenant_id = ? AND c.counter = g.counter AND c.bucket = g.bucket
      RETURNING c.counter, c.bucket, c.delta
    ),
    folded AS (
      INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
      SELECT ?, counter, bucket, sum(delta) FROM gone GROUP BY 1, 2, 3
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM folded`, [tenantId, minRows, maxGroups, tenantId, tenantId])
  return r.rows[0].n
}

/**
 * One folder at a time, and one folder of the tenant's rows at a time: transaction-scoped advisory
 * locks taken by a statement of their own (on a tenant-sharded cluster they are taken on the
 * coordinator, where every process connects). The tenant's lock is also the one the license
 * check takes before it folds a counter inside a write (migration 202611250100): holding it, a
 * folder's DELETE never meets another folder's row locks, so two folds never wait for each other.
 */
export async function tryFoldLock (tx: Queryable, tenantId: string): Promise<boolean> {
  const r = await tx.raw("SELECT pg_try_advisory_xact_lock(hashtext('counters.fold')) AND pg_try_advisory_xact_lock(hashtext(?), hashtext('counters.fold')) AS ok", [tenantId])
  return r.rows[0].ok === true
}

/**
 * Removes the rows folds deleted (outside any transaction). Until then each stays in the index,
 * and a sum skips it cheaply only once a scan has marked it dead, which no scan does while any
 * transaction of the cluster is older than the fold; VACUUM uses this database's own horizon.
 */
export async function vacuum (db: Queryable): Promise<void> {
  await db.raw('VACUUM (SKIP_LOCKED) counter_deltas')
}
