import type { Db, Queryable, Tx } from '../db.js'

export interface SealedRow { sealed: string, installed_at: Date }

export async function findSealed (db: Queryable, tenantId: string): Promise<SealedRow | null> {
  const r = await db.raw('SELECT sealed, installed_at FROM tenant_licenses WHERE tenant_id = ?', [tenantId])
  return r.rows[0] ?? null
}

export async function upsertSealed (tx: Tx, tenantId: string, sealed: string, by: string): Promise<void> {
  await tx.raw(`INSERT INTO tenant_licenses (tenant_id, sealed, installed_at, installed_by) VALUES (?, ?, now(), ?)
    ON CONFLICT (tenant_id) DO UPDATE SET sealed = EXCLUDED.sealed, installed_at = EXCLUDED.installed_at, installed_by = EXCLUDED.installed_by`, [tenantId, sealed, by])
}

/** Usage of the given counters; `month` selects the bucket of the monthly ones. */
export async function usage (db: Queryable, tenantId: string, live: string[], monthly: string[], month: string): Promise<Map<string, number>> {
  const r = await db.raw(`SELECT counter, coalesce(sum(delta), 0)::bigint AS n FROM counter_deltas
    WHERE tenant_id = ? AND (counter = ANY(?::text[]) OR (counter = ANY(?::text[]) AND bucket = ?)) GROUP BY counter`, [tenantId, live, monthly, month])
  return new Map(r.rows.map((row: { counter: string, n: number }) => [row.counter, Number(row.n)]))
}

/** Stable across restarts and equal in every process on the same database cluster and database. */
export async function deploymentIdentity (db: Db): Promise<string> {
  const r = await db.raw('SELECT system_identifier::text AS id, current_database() AS name FROM pg_control_system()')
  return `${r.rows[0].id}/${r.rows[0].name}`
}

// ---- The quota check (README "Quotas"): statements sent as ONE simple query, so each runs in a
// snapshot taken after the previous one (after the lock is held), in one round trip. Only values
// of a known form are inlined: tenant ids are 1-64 of [A-Za-z0-9._-], counters are our constants,
// buckets are 'YYYY-MM'; literal() still doubles quotes.

function literal (s: string): string {
  return `'${s.replace(/'/g, "''")}'`
}

function keys (tenantId: string, counter: string): string {
  return `hashtext(${literal(tenantId)}), hashtext(${literal(counter)})`
}

function totalSql (tenantId: string, counter: string, bucket: string | null): string {
  return `SELECT coalesce(sum(delta), 0)::bigint FROM counter_deltas WHERE tenant_id = ${literal(tenantId)} AND counter = ${literal(counter)}` +
    (bucket === null ? '' : ` AND bucket = ${literal(bucket)}`)
}

type Result = { rows: Array<Record<string, unknown>> }

/**
 * The far-from-the-limit path: under a savepoint, the (tenant, counter) lock in SHARED mode, then
 * the total this transaction sees (committed rows plus its own) and the most transactions that can
 * hold that lock at once (every connection, plus prepared transactions): each other holder is a
 * write that may have passed without committing yet, adding at most 1.
 */
export async function sharedCheck (tx: Tx, tenantId: string, counter: string, bucket: string | null): Promise<{ maxHolders: number, total: number }> {
  const r = await tx.raw(`SAVEPOINT license_quota;
    SELECT pg_advisory_xact_lock_shared(${keys(tenantId, counter)});
    SELECT (${totalSql(tenantId, counter, bucket)}) AS total,
      current_setting('max_connections')::int + current_setting('max_prepared_transactions')::int AS max_holders`) as unknown as Result[]
  return { maxHolders: Number(r[2].rows[0].max_holders), total: Number(r[2].rows[0].total) }
}

/**
 * The exact path: give the shared lock back (rolling back to the savepoint releases it), queue
 * behind other exact checkers of this counter, take the lock EXCLUSIVELY (every write that passed
 * the shared path has committed or rolled back by then), and read the exact total.
 */
export async function exclusiveTotal (tx: Tx, tenantId: string, counter: string, bucket: string | null): Promise<number> {
  const r = await tx.raw(`ROLLBACK TO SAVEPOINT license_quota;
    SELECT pg_advisory_xact_lock(${keys(tenantId, `${counter}:exact`)});
    SELECT pg_advisory_xact_lock(${keys(tenantId, counter)});
    SELECT (${totalSql(tenantId, counter, bucket)}) AS total`) as unknown as Result[]
  return Number(r[3].rows[0].total)
}
