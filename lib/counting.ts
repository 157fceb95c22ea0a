import type { Bindings, Queryable } from './db.js'

/** CONTRACT "Lists": a filtered total is exact up to this many items; above, it may be an estimate. */
export const EXACT_TOTAL_UP_TO = 10_000

export interface Total { total: number, exact: boolean }

/**
 * The number of rows `select` (a SELECT without LIMIT) yields: counted exactly up to
 * EXACT_TOTAL_UP_TO (the count stops there, so a huge result costs no more than 10,001 rows),
 * the planner's estimate above (never below the exact floor it has just seen).
 */
export async function boundedCount (db: Queryable, select: string, bindings: Bindings): Promise<Total> {
  const r = await db.raw(`SELECT count(*)::int AS n FROM (${select} LIMIT ${EXACT_TOTAL_UP_TO + 1}) x`, bindings)
  const n = r.rows[0].n as number
  if (n <= EXACT_TOTAL_UP_TO) return { total: n, exact: true }
  const plan = await db.raw(`EXPLAIN (FORMAT JSON) ${select}`, bindings)
  const estimate = Number(plan.rows[0]['QUERY PLAN'][0].Plan['Plan Rows'])
  return { total: Math.max(Math.round(estimate), n), exact: false }
}
