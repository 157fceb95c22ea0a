import type { Db } from '../db.js'

// Read-only figures over pg-boss's own tables (schema pgboss, global: not tenant data).

export interface DepthRow { name: string, state: string, n: number }

/** Jobs not finished yet, per queue and state. */
export async function depth (db: Db, queues: string[]): Promise<DepthRow[]> {
  const r = await db.raw(`
    SELECT name, state::text AS state, count(*)::int AS n FROM pgboss.job
    WHERE name = ANY(?::text[]) AND state < 'completed' GROUP BY name, state`, [queues])
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
