import type { Bindings, Queryable } from './db.js'

/** docs/behaviour.md "Lists": a filtered total is exact up to this many items; above, it may be an estimate. */
export const EXACT_TOTAL_UP_TO = 10_000

export interface Total { total: number, exact: boolean }

/** SQL counting the rows of `select` (a SELECT without LIMIT), stopping after EXACT_TOTAL_UP_TO + 1. */
export function cappedCount (select: string): string {
  return `SELECT count(*)::int AS n FROM (${select} LIMIT ${EXACT_TOTAL_UP_TO + 1}) x`
}

/**
 * The total from a capped count `n` of `select`: exact up to EXACT_TOTAL_UP_TO, else the
 * planner's estimate (never below the floor just seen).
 */
export async function totalFrom (db: Queryable, n: number, select: string, bindings: Bindings): Promise<Total> {
  if (n <= EXACT_TOTAL_UP_TO) return { total: n, exact: true }
  const plan = await db.raw(`EXPLAIN (FORMAT JSON) ${select}`, bindings)
  const estimate = Number(plan.rows[0]['QUERY PLAN'][0].Plan['Plan Rows'])
  return { total: Math.max(Math.round(estimate), n), exact: false }
}

/**
 * The number of rows `select` yields: counted exactly up to EXACT_TOTAL_UP_TO (the count stops
 * there, so a huge result costs no more than 10,001 rows), the planner's estimate above.
 */
export async function boundedCount (db: Queryable, select: string, bindings: Bindings): Promise<Total> {
  const r = await db.raw(cappedCount(select), bindings)
  return totalFrom(db, r.rows[0].n, select, bindings)
}
