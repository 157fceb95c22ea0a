import type { Db } from '../db.js'

// Read-only figures over pg-boss's own tables (schema pgboss, global: not tenant data).

export interface DepthRow { name: string, state: string, n: number, oldest_s: number }

/**
 * Jobs not finished yet, per queue and state, with the seconds since the longest-waiting of those
 * that are due became due (0 when none is; a job deferred by startAfter waits from then).
 */
export async function depth (db: Db, queues: string[]): Promise<DepthRow[]> {
  const r = await db.raw(`
    SELECT name, state::text AS state, count(*)::int AS n,
      coalesce(extract(epoch FROM now() - min(greatest(created_on, start_after)) FILTER (WHERE start_after <= now())), 0)::float8 AS oldest_s
    FROM pgboss.job WHERE name = ANY(?::text[]) AND state < 'completed' GROUP BY name, state`, [queues])
  return r.rows
}

export interface FailedRow { name: string, n: number }

/**
 * Jobs that failed for good (retries exhausted) and are still retained, per queue: pg-boss's own
 * count in its queue table, which a supervising worker refreshes every monitor pass (about a
 * minute), so it needs no scan of the retained jobs.
 */
export async function failedKept (db: Db, queues: string[]): Promise<FailedRow[]> {
  const r = await db.raw('SELECT name, failed_count AS n FROM pgboss.queue WHERE name = ANY(?::text[])', [queues])
  return r.rows
}

export interface StartRow { name: string, started_on: Date, s: number }

/** Jobs started after `from` (oldest first, at most 10,000), with their wait from due to start in seconds. */
export async function startedSince (db: Db, queues: string[], from: Date): Promise<StartRow[]> {
  const r = await db.raw(`
    SELECT name, started_on, extract(epoch FROM started_on - greatest(created_on, start_after))::float8 AS s FROM pgboss.job
    WHERE name = ANY(?::text[]) AND state >= 'active' AND started_on > ? ORDER BY started_on LIMIT 10000`, [queues, from])
  return r.rows
}
