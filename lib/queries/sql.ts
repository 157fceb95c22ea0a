import type { Queryable } from '../db.js'
import { EXACT_TOTAL_UP_TO, totalFrom, type Total } from '../counting.js'
import * as objects from '../objects/index.js'
import { Fragment, sql, trusted } from './fragment.js'
import { LIMITS } from './fields.js'
import type { GraphSpec } from './types.js'

// The statements of the query service. Predicates, ORDER BY and aggregates come compiled
// from compile.ts as Fragments; here they are placed around the object source `o`.

// A result item is the object as GET /v1/objects lists it, serialised by PostgreSQL: a page of
// 1,000 items would otherwise be parsed into rows and Dates only to be formatted again.
const ITEM = trusted(objects.objectJson('p', true))

/**
 * The tenant's objects at a time point (lib/objects objectSource): the objects table now,
 * or the versions live at `asOf`. Its WHERE is flattened into ours by the planner, so the
 * indexes of objects (GiST on geom, GIN on attributes, ...) serve our predicates.
 */
export function source (tenantId: string, asOf: string | undefined): Fragment {
  const src = objects.objectSource([tenantId], asOf === undefined ? {} : { asOf })
  return trusted(src.sql, src.params)
}

function run (db: Queryable, f: Fragment) {
  return db.raw(f.text, f.params)
}

/**
 * The page as a JSON array (items in order), the number of items and whether more follow (the
 * page is read one row beyond its limit), and, when `counted`, the set's size counted up to
 * 10,001 in the same statement (column n; one round trip).
 */
export function pageJsonStatement (src: Fragment, where: Fragment, order: Fragment, limit: number, offset: number, counted = false): Fragment {
  const count = counted ? sql`(SELECT count(*)::int FROM (${matches(src, where)} LIMIT ${EXACT_TOTAL_UP_TO + 1}) c)` : trusted('NULL::int')
  return sql`SELECT coalesce(json_agg(x.item ORDER BY x.rn) FILTER (WHERE x.rn <= ${limit}), '[]')::text AS items,
      least(count(*), ${limit})::int AS count, count(*) > ${limit} AS more, ${count} AS n
    FROM (SELECT ${ITEM} AS item, row_number() OVER () AS rn
      FROM (SELECT o.* FROM ${src} o WHERE ${where} ORDER BY ${order} LIMIT ${limit + 1} OFFSET ${offset}) p) x`
}

function matches (src: Fragment, where: Fragment): Fragment {
  return sql`SELECT 1 FROM ${src} o WHERE ${where}`
}

export async function selectPageJson (db: Queryable, statement: Fragment): Promise<{ items: string, count: number, more: boolean, n: number | null }> {
  return (await run(db, statement)).rows[0]
}

/** The total from the page statement's capped count: exact up to 10,000, else the planner's estimate. */
export function totalOfMatches (db: Queryable, src: Fragment, where: Fragment, n: number): Promise<Total> {
  const f = matches(src, where)
  return totalFrom(db, n, f.text, f.params)
}

/** EXPLAIN of a statement, with its bindings (planned as the real run plans it). */
export async function explain (db: Queryable, statement: Fragment): Promise<string> {
  const r = await run(db, sql`EXPLAIN ${statement}`)
  return r.rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n')
}

/** The size of the whole filtered set and, when asked, aggregates a0, a1... over it. */
export async function selectStats (db: Queryable, src: Fragment, where: Fragment, aggregates: Fragment | null): Promise<Record<string, unknown> & { total: number }> {
  const extra = aggregates === null ? trusted('') : sql`, ${aggregates}`
  const r = await run(db, sql`SELECT count(*) AS total${extra} FROM ${src} o WHERE ${where}`)
  return r.rows[0]
}

export interface GraphRows {
  truncated: boolean
  objects: Array<{ id: string, typeId: string, attributes: Record<string, unknown> }>
  relations: Array<{ id: string, fromObjectId: string, toObjectId: string, relationType: string, metadata: Record<string, unknown> }>
}

/** Relations followable at the time point: live now, or existing at asOf (by created_at/deleted_at). */
function relationLive (asOf: string | undefined): Fragment {
  if (asOf === undefined) return trusted('r.deleted_at IS NULL')
  return sql`r.created_at <= ${asOf}::timestamptz AND (r.deleted_at IS NULL OR r.deleted_at > ${asOf}::timestamptz)`
}

/**
 * One hop from the walk row `w`: (rel, next) pairs in the chosen direction(s), to objects live
 * at the time point. The liveness test is a scalar subquery on purpose: the planner keeps it a
 * per-row primary-key probe. As an EXISTS it may become a semi-join that, with a fresh tenant's
 * statistics, scans all the tenant's objects once per walk row.
 */
function step (tenantId: string, src: Fragment, g: GraphSpec, asOf: string | undefined): Fragment {
  const types = g.relationTypes === null ? trusted('') : sql` AND r.relation_type = ANY(${g.relationTypes}::text[])`
  const hop = (near: string, far: string) => sql`SELECT r.id AS rel, ${trusted(`r.${far}`)} AS next FROM relations r
    WHERE r.tenant_id = ${tenantId} AND ${trusted(`r.${near}`)} = w.id AND r.id IS DISTINCT FROM w.via AND ${relationLive(asOf)}${types}
      AND (SELECT true FROM ${src} n WHERE n.id = ${trusted(`r.${far}`)} LIMIT 1)`
  const out = hop('from_object_id', 'to_object_id')
  const inc = hop('to_object_id', 'from_object_id')
  if (g.direction === 'outgoing') return out
  if (g.direction === 'incoming') return inc
  return sql`${out} UNION ALL ${inc}`
}

/**
 * Graph expansion as one recursive statement. `walk` holds (object, depth, relation it was
 * reached by); UNION discards rows already produced, so a cycle ends at maxDepth at the latest
 * and each (object, depth, relation) is expanded once. A hop never goes straight back over the
 * relation it came by, and reaches only objects live at the time point. The final lookups are
 * LATERAL ... OFFSET 0 so they stay primary-key probes whatever the statistics say (the CTEs'
 * row counts are unknown to the planner). The walk is cut after
 * LIMITS.graphWalkRows rows (PostgreSQL evaluates a recursive CTE only as far as it is read);
 * the nearest LIMITS.graphNodes objects are kept, and `truncated` says whether anything was cut.
 */
export async function expandGraph (db: Queryable, tenantId: string, src: Fragment, start: Fragment, g: GraphSpec, asOf: string | undefined): Promise<GraphRows> {
  const r = await run(db, sql`
    WITH RECURSIVE
    start AS (${start}),
    walk (id, depth, via) AS (
      SELECT id, 0, NULL::uuid FROM start
      UNION
      SELECT e.next, w.depth + 1, e.rel
      FROM walk w CROSS JOIN LATERAL (${step(tenantId, src, g, asOf)}) e
      WHERE w.depth < ${g.maxDepth}::int
    ),
    capped AS (SELECT id, depth, via FROM walk LIMIT ${LIMITS.graphWalkRows}),
    nodes AS (SELECT id, min(depth) AS depth FROM capped GROUP BY id),
    kept AS (SELECT id, depth FROM nodes ORDER BY depth, id LIMIT ${LIMITS.graphNodes}),
    edges AS (SELECT DISTINCT via AS id FROM capped WHERE via IS NOT NULL)
    SELECT
      (SELECT count(*) FROM nodes) > ${LIMITS.graphNodes} OR (SELECT count(*) FROM capped) >= ${LIMITS.graphWalkRows} AS truncated,
      (SELECT coalesce(json_agg(json_build_object('id', o.id, 'typeId', o.type_id, 'attributes', o.attributes) ORDER BY k.depth, k.id), '[]'::json)
        FROM kept k CROSS JOIN LATERAL (SELECT o.id, o.type_id, o.attributes FROM ${src} o WHERE o.id = k.id OFFSET 0) o) AS objects,
      (SELECT coalesce(json_agg(json_build_object('id', r.id, 'fromObjectId', r.from_object_id, 'toObjectId', r.to_object_id,
          'relationType', r.relation_type, 'metadata', r.metadata) ORDER BY r.created_at, r.id), '[]'::json)
        FROM edges e CROSS JOIN LATERAL (SELECT * FROM relations r WHERE r.id = e.id AND r.tenant_id = ${tenantId} OFFSET 0) r
        WHERE r.from_object_id IN (SELECT id FROM kept) AND r.to_object_id IN (SELECT id FROM kept)) AS relations`)
  return r.rows[0]
}

/** Start objects given by id: those live at the time point, in any order. */
export function startByIds (src: Fragment, ids: string[]): Fragment {
  return sql`SELECT o.id FROM ${src} o WHERE o.id = ANY(${ids}::uuid[])`
}

/** Start objects from the query: its page, as the client sorted and paged it. */
export function startByQuery (src: Fragment, where: Fragment, order: Fragment, limit: number, offset: number): Fragment {
  return sql`SELECT o.id FROM ${src} o WHERE ${where} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`
}
