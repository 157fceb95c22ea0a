import type { ServiceContext } from '../context.js'
import { withCallerCost } from '../db.js'
import * as access from '../access/index.js'
import { pageJson, pagination, type Page } from '../schemas.js'
import { aggregateList, orderBy, whereClause } from './compile.js'
import { fromListParams, parseRunQuery, type ListParams } from './parse.js'
import * as sql from './sql.js'
import { toAggregateDto, type QueryItem } from './dto.js'
import type { GraphSpec, Query } from './types.js'

export type QueryPage = Page<QueryItem> & { aggregations?: Array<ReturnType<typeof toAggregateDto>> }
export type GraphResult = sql.GraphRows

/** POST /v1/queries/objects/run: a page with aggregations, or the expanded graph. */
export async function runQuery (ctx: ServiceContext, body: unknown): Promise<QueryPage | GraphResult> {
  return JSON.parse(await runQueryJson(ctx, body))
}

/** The same answer as JSON text, a page's items serialised by PostgreSQL (what the route sends). */
export async function runQueryJson (ctx: ServiceContext, body: unknown): Promise<string> {
  await access.authorize(ctx, 'objects', 'read')
  const q = parseRunQuery(body)
  await ctx.hooks.beforeQueryRun(ctx) // lib/license counts query_count
  const graph = q.graph
  return graph === null ? bounded(ctx, c => findObjects(c, q)) : JSON.stringify(await bounded(ctx, c => expandGraph(c, q, graph)))
}

/** A run's statements under QUERY_STATEMENT_TIMEOUT_MS: the caller chooses its cost. */
function bounded<T> (ctx: ServiceContext, fn: (ctx: ServiceContext) => Promise<T>): Promise<T> {
  return withCallerCost(ctx, db => fn({ ...ctx, db }))
}

/** GET /v1/queries/objects: typeId, status (workflowState), paging and one sort key. */
export async function queryObjects (ctx: ServiceContext, params: ListParams): Promise<QueryPage> {
  return JSON.parse(await queryObjectsJson(ctx, params))
}

export async function queryObjectsJson (ctx: ServiceContext, params: ListParams): Promise<string> {
  await access.authorize(ctx, 'objects', 'read')
  return bounded(ctx, c => findObjects(c, fromListParams(params)))
}

/**
 * Compiles once, then reads the page (one row beyond it, so hasMore is exact) with the set's
 * size: without aggregations, counted up to 10,001 in the page's own statement (the planner's
 * estimate above 10,000, docs/behaviour.md "Lists"); with them, the exact count and the aggregates over
 * the whole set.
 */
async function findObjects (ctx: ServiceContext, q: Query): Promise<string> {
  const src = sql.source(ctx.tenantId, q.asOf)
  const where = whereClause(q.filter)
  const order = orderBy(q.sorts)
  if (q.aggregations.length === 0) {
    // One round trip: the page and the capped count in one statement; an estimate only above 10,000.
    const p = await sql.selectPageJson(ctx.db, sql.pageJsonStatement(src, where, order, q.limit, q.offset, true))
    const t = await sql.totalOfMatches(ctx.db, src, where, p.n ?? 0)
    return pageJson(p.items, pagination(p.count, q.limit, q.offset, t.total, { exact: t.exact, more: p.more }))
  }
  const aggregates = aggregateList(q.aggregations)
  // One after the other: under a statement bound both run on the bound's one connection.
  const p = await sql.selectPageJson(ctx.db, sql.pageJsonStatement(src, where, order, q.limit, q.offset))
  const stats = await sql.selectStats(ctx.db, src, where, aggregates)
  const aggregations = q.aggregations.map((a, i) => toAggregateDto(a, (stats as Record<string, unknown>)[`a${i}`]))
  return pageJson(p.items, pagination(p.count, q.limit, q.offset, stats.total, { more: p.more }), { aggregations })
}

/** With objectIds those are the start and filters do not apply; else the filtered page is. */
async function expandGraph (ctx: ServiceContext, q: Query, g: GraphSpec): Promise<GraphResult> {
  const src = sql.source(ctx.tenantId, q.asOf)
  const start = g.objectIds !== null
    ? sql.startByIds(src, g.objectIds)
    : sql.startByQuery(src, whereClause(q.filter), orderBy(q.sorts), q.limit, q.offset)
  return sql.expandGraph(ctx.db, ctx.tenantId, src, start, g, q.asOf)
}

/** The plan of a run's page statement (diagnostics, tests and the bench; not an endpoint). */
export async function explainQuery (ctx: ServiceContext, body: unknown): Promise<string> {
  await access.authorize(ctx, 'objects', 'read')
  const q = parseRunQuery(body)
  return sql.explain(ctx.db, sql.pageJsonStatement(sql.source(ctx.tenantId, q.asOf), whereClause(q.filter), orderBy(q.sorts), q.limit, q.offset))
}
