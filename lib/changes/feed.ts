import type { ServiceContext } from '../context.js'
import type { Db } from '../db.js'
import { parseQuery } from '../validation.js'
import * as access from '../access/index.js'
import * as audit from '../audit/index.js'
import * as layers from '../layers/index.js'
import { badCursor, decodeCursor, encodeCursor } from './cursor.js'
import * as schema from './schema.js'
import * as sql from './sql.js'

export interface ChangesQuery {
  since?: string
  limit: number
  typeId?: string
  bbox?: string
  layer?: string
  include: 'object' | 'id'
}

/** What a reader follows: the selection and where it starts (a sequence of the tenant's chain). */
export interface Start { selection: sql.Selection, after: number }

/** A read of the feed: the changes, the sequence to ask after next, and whether more follow at once. */
export interface Page { rows: sql.ChangeRow[], next: number, hasMore: boolean }

/**
 * Parses and authorizes a feed request (objects:read), resolves its selection (the layer's
 * filters with typeId and bbox, lib/layers `selection`) and its start: `position` (the stream's
 * Last-Event-ID) or `since` (absent: 0, the beginning; `now`: the current head; else a cursor).
 */
export async function start (ctx: ServiceContext, query: Record<string, unknown>, position?: string, check = false): Promise<{ q: ChangesQuery, start: Start }> {
  const q = parseQuery<ChangesQuery>(schema.ChangesQuery, query)
  await access.authorize(ctx, 'objects', 'read')
  const { filter } = await layers.selection(ctx, q)
  const selection: sql.Selection = { where: filter === null ? null : layers.whereSql(filter), withObject: q.include === 'object' }
  const field = position !== undefined ? 'Last-Event-ID' : 'since'
  const cursor = position ?? q.since
  if (cursor === 'now') {
    await audit.sequencePending(ctx.db, ctx.tenantId)
    return { q, start: { selection, after: (await sql.readChanges(ctx.db, ctx.tenantId, selection, 0, 0, 0)).head } }
  }
  const after = cursor === undefined ? 0 : decodeCursor(ctx.tenantId, cursor, field)
  // The page's read checks the position itself; a stream checks it before it starts.
  if (position !== undefined || check) await readPage(ctx.db, ctx.tenantId, selection, after, 0, field)
  return { q, start: { selection, after } }
}

/** How far past the cursor one read looks for matching changes (the chain also holds other events). */
const scanOf = (limit: number): number => Math.max(10 * limit, 1000)

/**
 * Up to `limit` changes after `after`. Pending events are sequenced first when the read reached
 * the chain's end and some are waiting (as the audit list does), so a change whose write was
 * answered is read; a reader never sees an unsequenced event, so no later event can take a
 * sequence at or below a position it was handed.
 */
export async function readPage (db: Db, tenantId: string, s: sql.Selection, after: number, limit: number, field = 'since'): Promise<Page> {
  const scan = scanOf(limit)
  let r = await sql.readChanges(db, tenantId, s, after, limit + 1, scan)
  if (r.pending && r.rows.length <= limit && after + scan > r.head) {
    await audit.sequencePending(db, tenantId)
    r = await sql.readChanges(db, tenantId, s, after, limit + 1, scan)
  }
  // A position beyond the head was never handed out by this database (or came before a restore).
  if (after > r.head) throw badCursor(field, 'lies beyond the end of this tenant\'s feed')
  if (limit > 0 && r.rows.length > limit) {
    const rows = r.rows.slice(0, limit)
    return { rows, next: rows[limit - 1].sequence, hasMore: true }
  }
  const end = Math.min(r.head, after + scan)
  return { rows: r.rows, next: end, hasMore: end < r.head }
}

/** GET /v1/changes: one page as JSON text `{changes, nextCursor, hasMore}` (PostgreSQL built each change). */
export async function listChanges (ctx: ServiceContext, query: Record<string, unknown>): Promise<string> {
  const { q, start: s } = await start(ctx, query)
  const page = await readPage(ctx.db, ctx.tenantId, s.selection, s.after, q.limit)
  return `{"changes":[${page.rows.map(r => r.change).join(',')}],"nextCursor":${JSON.stringify(encodeCursor(ctx.tenantId, page.next))},"hasMore":${page.hasMore}}`
}
