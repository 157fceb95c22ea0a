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

/**
 * Folds every group (tenant, counter, bucket) holding more than `minRows` rows into one row.
 * Only committed rows are seen and deleted, and the folded row is inserted in the same statement,
 * so every snapshot sees either the old rows or their sum: totals never move. Returns the groups
 * folded. `tenantId` limits it to one tenant (a router query on a tenant-sharded cluster). One
 * folder at a time (an advisory lock): a second one finds the lock taken and folds nothing.
 */
export async function fold (db: Queryable, minRows: number, maxGroups: number, tenantId: string | null): Promise<number> {
  const r = await db.raw(`
    WITH lock AS (SELECT pg_try_advisory_xact_lock(hashtext('counters.fold')) AS ok),
    g AS (
      SELECT tenant_id, counter, bucket FROM counter_deltas, lock
      WHERE lock.ok AND (?::text IS NULL OR tenant_id = ?)
      GROUP BY 1, 2, 3 HAVING count(*) > ? LIMIT ?
    ),
    gone AS (
      DELETE FROM counter_deltas c USING g
      WHERE c.tenant_id = g.tenant_id AND c.counter = g.counter AND c.bucket = g.bucket
      RETURNING c.tenant_id, c.counter, c.bucket, c.delta
    ),
    folded AS (
      INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
      SELECT tenant_id, counter, bucket, sum(delta) FROM gone GROUP BY 1, 2, 3
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM folded`, [tenantId, tenantId, minRows, maxGroups])
  return r.rows[0].n
}
