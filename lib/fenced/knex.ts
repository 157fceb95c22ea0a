import type { Knex } from 'knex'
import type pg from 'pg'

// What this project uses of knex's and tarn's internals, and nothing else does (README here).
// Pinned: knex 3.3.0 (tarn 3.x through it); test/integration/fenced.test.ts fails when an upgrade
// changes any of it.

/** A pooled connection as knex keeps it: pg's client, marked when knex must not reuse it. */
export type PoolConnection = pg.Client & { __knex__disposed?: unknown, __knexTxId?: string, processID: number }

interface KnexClient {
  config: object
  acquireConnection: () => Promise<PoolConnection>
  releaseConnection: (c: PoolConnection) => Promise<void>
  emit: (event: string, ...args: unknown[]) => void
  /** The pool's tarn Pool (undefined once destroyed); a transaction's client shares its pool's. */
  pool?: TarnPool
}

interface TarnPool {
  destroyed?: boolean
  on: (event: 'acquireRequest' | 'poolDestroyRequest', handler: () => void) => void
  numPendingAcquires: () => number
  numUsed: () => number
  numFree: () => number
}

const clientOf = (db: Knex | Knex.Transaction): KnexClient => db.client as unknown as KnexClient

/**
 * An object that stands for a pool and every transaction on it: a transaction's client (and a
 * savepoint's) is a copy of the pool's that shares its configuration object.
 */
export const poolIdentity = (db: Knex | Knex.Transaction): object => clientOf(db).config

/** Whether the pool is being or has been destroyed (knex `destroy`). */
export function poolDestroyed (db: Knex): boolean {
  const pool = clientOf(db).pool
  return pool === undefined || pool.destroyed === true
}

/** A connection: the pool's, or, on a transaction, the transaction's own (as knex's runner gets it). */
export const acquire = (db: Knex | Knex.Transaction): Promise<PoolConnection> => clientOf(db).acquireConnection()

/** Gives a connection back to the pool (a discarded one is destroyed there, not reused). */
export const release = (db: Knex | Knex.Transaction, conn: PoolConnection): Promise<void> => clientOf(db).releaseConnection(conn)

/** Marks a connection so the pool destroys it instead of handing it out again. */
export function discard (conn: PoolConnection, reason: string): void {
  conn.__knex__disposed ??= reason
}

export const isDiscarded = (conn: PoolConnection): boolean => Boolean(conn.__knex__disposed)

/**
 * Emits knex's 'query', 'query-response' or 'query-error' event for a statement run on a
 * connection directly, as knex's runner would: the pool's and the transaction's listeners (the
 * metrics, the tests' statement counts) hear it.
 */
export function emitQueryEvent (db: Knex | Knex.Transaction, event: 'query' | 'query-response' | 'query-error', conn: PoolConnection, query: { sql: string, bindings: unknown[], name: string, uid: string }, payload?: unknown): void {
  const q = { method: 'raw', sql: query.sql, bindings: query.bindings, options: { name: query.name }, __knexQueryUid: query.uid, __knexTxId: conn.__knexTxId }
  if (event === 'query') clientOf(db).emit(event, q)
  else clientOf(db).emit(event, payload, q)
}

/** The pool behind `db` as tarn keeps it, or null once destroyed: a key for per-pool state. */
export function tarnPool (db: Knex | Knex.Transaction): object | null {
  return clientOf(db).pool ?? null
}

/**
 * Calls `fn` whenever someone asks the pool for a connection (tarn's acquireRequest, emitted
 * before the request is queued) and when the pool is being destroyed.
 */
export function onPoolDemand (db: Knex, fn: () => void): void {
  const pool = clientOf(db).pool
  pool?.on('acquireRequest', fn)
  pool?.on('poolDestroyRequest', fn)
}

/** Callers waiting for a connection of the pool. */
export const pendingAcquires = (db: Knex | Knex.Transaction): number => clientOf(db).pool?.numPendingAcquires() ?? 0

/** The pool's connections lent out and idle, and its waiting callers (the /metrics pool gauges). */
export function poolCounts (db: Knex): { used: number, idle: number, waiting: number } {
  const pool = clientOf(db).pool
  return pool === undefined ? { used: 0, idle: 0, waiting: 0 } : { used: pool.numUsed(), idle: pool.numFree(), waiting: pool.numPendingAcquires() }
}
