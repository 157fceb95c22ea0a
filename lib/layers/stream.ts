import { Readable, Transform, pipeline } from 'node:stream'
import { to as copyTo } from 'pg-copy-streams'
import type { ServiceContext } from '../context.js'
import { engineOf } from '../db.js'
import { acquire, discard, release as giveBack } from '../fenced/knex.js'
import { parseQuery } from '../validation.js'
import * as schema from './schema.js'
import * as exportSql from './export-sql.js'
import { plan, type ExportParams } from './exports.js'
import { matchesIfNoneMatch } from './cache.js'

// GET /v1/layers/objects/stream: NDJSON, one Feature per line, by `COPY (SELECT feature::text)
// TO STDOUT` on a connection of its own (pg-copy-streams). PostgreSQL writes the lines; the
// server passes COPY's bytes through (undoing COPY's text escaping, below) without looking at
// rows. Memory stays flat whatever the count: COPY's data is read from the socket only when the
// HTTP response has drained (stream backpressure; PostgreSQL then waits on its socket).
// A client that goes away destroys the pipeline: the backend is terminated (a COPY cannot be
// stopped otherwise) and the connection dropped by the pool.

export interface FeatureStream { etag: string, maxAge: number, stream: Readable | null }

export async function featureStream (ctx: ServiceContext, query: Record<string, unknown>, ifNoneMatch?: string): Promise<FeatureStream> {
  const q = parseQuery<ExportParams>(schema.StreamQuery, query)
  const pl = await plan(ctx, 'ndjson', q)
  const head = { etag: pl.etag, maxAge: pl.ttl }
  if (matchesIfNoneMatch(ifNoneMatch, pl.etag)) return { ...head, stream: null }
  if (!engineOf(ctx.db).cursors) {
    // Embedded PGlite: one connection and no cursors or COPY; read every line, then free the connection.
    const lines = await exportSql.allFeatureLines(ctx.db, pl.scope, pl.fields)
    return { ...head, stream: Readable.from(lines.map(line => line + '\n')) }
  }
  const statement = exportSql.streamCopyStatement(pl.scope, pl.fields)
  const conn = await acquire(ctx.db)
  // The COPY is not bound by the pool's statement_timeout (DB_STATEMENT_TIMEOUT_MS): a large
  // export may stream for longer than any other statement should run. Set for this connection
  // (queued ahead of the COPY, no wait) and reset to the pool's own before it goes back.
  const unbounded = ctx.config.dbStatementTimeoutMs > 0
  if (unbounded) conn.query('SET statement_timeout = 0').catch(() => {})
  const release = (): void => {
    if (!unbounded) { void giveBack(ctx.db, conn); return }
    conn.query('RESET statement_timeout').then(() => giveBack(ctx.db, conn), () => {
      discard(conn, 'could not reset statement_timeout')
      return giveBack(ctx.db, conn)
    }).catch(() => {})
  }
  const rows = conn.query(copyTo(statement))
  const lines = copyTextDecoder()
  pipeline(rows, lines, err => {
    // Done, or refused by the database (an error it answered ends the COPY: the connection is
    // ready for the next statement).
    if (err === undefined || err === null || (err as { severity?: string }).severity !== undefined) { release(); return }
    // Closed early (client gone) or failed: the connection may be mid-COPY, which only ends
    // with the backend. Terminate it (waiting up to 5 s for it to go), and let the pool drop
    // the connection rather than hand it out again.
    discard(conn, 'NDJSON stream ended early')
    ctx.log.debug({ err: { message: err.message } }, 'NDJSON stream ended early')
    exportSql.terminateBackend(ctx.db, conn.processID)
      .catch(e => ctx.log.warn({ err: { message: (e as Error).message } }, 'could not end an abandoned NDJSON stream'))
      .finally(() => { void giveBack(ctx.db, conn) })
  })
  // An error before the first line (a value the database refuses, such as an asOf in year 0)
  // is the request's error, answered with its status, instead of a connection cut before any
  // response: the stream is handed over once it has its first bytes or has ended.
  await firstBytes(lines)
  return { ...head, stream: lines }
}

/** Resolves once `s` has bytes to read (put back for its consumer) or has ended; rejects with its error. */
function firstBytes (s: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (err?: Error): void => {
      s.off('readable', onReadable)
      s.off('error', settle)
      if (err === undefined) resolve()
      else reject(err)
    }
    const onReadable = (): void => {
      const chunk: Buffer | null = s.read()
      if (chunk !== null) s.unshift(chunk)
      settle()
    }
    s.on('readable', onReadable)
    s.once('error', settle)
  })
}

const BACKSLASH = 0x5c
const UNESCAPED: Record<number, number> = { 0x5c: 0x5c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09, 0x62: 0x08, 0x66: 0x0c, 0x76: 0x0b }

/**
 * COPY's text format escapes a backslash in the data as `\\` (and control characters, which
 * JSON text never holds raw, as `\n`, `\t`, ...); rows end in a newline, exactly NDJSON's.
 * This undoes the escapes over the byte stream: chunks without a backslash (most) pass as they
 * are, and an escape split across two chunks is carried over.
 */
export function copyTextDecoder (): Transform {
  let carry = false
  return new Transform({
    transform (chunk: Buffer, _enc, done) {
      if (!carry && chunk.indexOf(BACKSLASH) === -1) { done(null, chunk); return }
      const out = Buffer.allocUnsafe(chunk.length)
      let n = 0
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]
        if (carry) { out[n++] = UNESCAPED[b] ?? b; carry = false } else if (b === BACKSLASH) carry = true
        else out[n++] = b
      }
      done(null, out.subarray(0, n))
    }
  })
}
