import { Readable, Transform, pipeline } from 'node:stream'
import QueryStream from 'pg-query-stream'
import type pg from 'pg'
import type { ServiceContext } from '../context.js'
import { engineOf } from '../db.js'
import { parseQuery } from '../validation.js'
import * as schema from './schema.js'
import * as exportSql from './export-sql.js'
import { plan, type ExportParams } from './exports.js'
import { matchesIfNoneMatch } from './cache.js'

// GET /v1/layers/objects/stream: NDJSON, one Feature per line, from a server-side cursor
// (pg-query-stream) on a connection of its own. Memory stays flat whatever the count: rows are
// fetched BATCH at a time, and only when the HTTP response has drained (stream backpressure).
// A client that goes away destroys the pipeline: the cursor is closed and the connection
// returned (or dropped, when closing failed).

const BATCH = 500

export interface FeatureStream { etag: string, maxAge: number, stream: Readable | null }

type PooledClient = pg.Client & { __knex__disposed?: unknown, readyForQuery?: boolean }

export async function featureStream (ctx: ServiceContext, query: Record<string, unknown>, ifNoneMatch?: string): Promise<FeatureStream> {
  const q = parseQuery<ExportParams>(schema.StreamQuery, query)
  const pl = await plan(ctx, 'ndjson', q)
  const head = { etag: pl.etag, maxAge: pl.ttl }
  if (matchesIfNoneMatch(ifNoneMatch, pl.etag)) return { ...head, stream: null }
  const statement = exportSql.streamStatement(pl.scope, pl.fields)
  if (!engineOf(ctx.db).cursors) {
    // Embedded PGlite: one connection and no cursors; read every line, then free the connection.
    const r = await ctx.db.raw(statement.text, statement.params)
    return { ...head, stream: Readable.from((r.rows as Array<{ f: string }>).map(row => row.f + '\n')) }
  }
  const native = ctx.db.raw(statement.text, statement.params).toSQL().toNative()
  const client = ctx.db.client as { acquireConnection: () => Promise<PooledClient>, releaseConnection: (c: PooledClient) => Promise<void> }
  const conn = await client.acquireConnection()
  const rows = conn.query(new QueryStream(native.sql, native.bindings as unknown[], { batchSize: BATCH }))
  const lines = new Transform({
    writableObjectMode: true,
    transform (row: { f: string }, _enc, done) { done(null, row.f + '\n') }
  })
  pipeline(rows, lines, err => {
    if (err) {
      // Closed early (client gone) or failed. The cursor's close leaves the connection ready for
      // the next query; if it did not, the pool must drop it rather than hand it out again.
      if (conn.readyForQuery !== true) conn.__knex__disposed ??= 'NDJSON stream ended early'
      ctx.log.debug({ err: { message: err.message } }, 'NDJSON stream ended early')
    }
    void client.releaseConnection(conn)
  })
  return { ...head, stream: lines }
}
