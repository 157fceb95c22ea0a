import { createHash } from 'node:crypto'
import knexFactory, { type Knex } from 'knex'
import pg from 'pg'
import { AppError } from './errors.js'
import { dbQueryDuration } from './metrics.js'
import { statementKind } from './statement-kind.js'
import { namedQuery, queryBytes } from './fenced/pg.js'
import { acquire, emitQueryEvent, isDiscarded, onPoolDemand, pendingAcquires, poolDestroyed, poolIdentity, release, tarnPool, type PoolConnection } from './fenced/knex.js'
export { joinBytes } from './fenced/pg.js'
export { poolCounts } from './fenced/knex.js'

export type Db = Knex
export type Tx = Knex.Transaction
/** A pool or an open transaction: lib functions that only read accept either. */
export type Queryable = Knex | Knex.Transaction

// node-postgres returns int8 (count(*), bigserial) as strings; our counts fit in a double.
pg.types.setTypeParser(20, (v: string) => Number(v))

/**
 * A pool. `statementTimeoutMs` (the API's DB_STATEMENT_TIMEOUT_MS; 0 or absent: none) is every
 * connection's statement_timeout, sent with the connection's startup (no round trip), so `RESET
 * statement_timeout` returns to it; a statement it cancels becomes NOT_READY (translatePgError).
 */
export function createDb (databaseUrl: string, opts: { poolMax?: number, statementTimeoutMs?: number } = {}): Db {
  const timeout = opts.statementTimeoutMs ?? 0
  const db = knexFactory({
    client: 'pg',
    connection: timeout > 0 ? { connectionString: databaseUrl, statement_timeout: timeout } : databaseUrl,
    pool: { min: 0, max: opts.poolMax ?? 20, afterCreate: planSettings },
    acquireConnectionTimeout: 10_000
  })
  instrument(db)
  return db
}

/**
 * How the service's connections plan. Without JIT compilation: its statements are short and many
 * run at once; PostGIS declares its spatial predicates at a cost of 10,000 per call, so a spatial
 * page's estimate crosses jit_above_cost whenever ANALYZE's sample lifts its row estimate, and
 * compiling the expressions then took most of the statement's time. Without parallel workers: one
 * statement, one core. A request whose cost the caller chooses (a text scan over a tenant's every
 * row) must not take the cores the other tenants' requests run on (docs/behaviour.md "Platform");
 * and a worker is a process of its own that starts PostGIS and its PROJ context from nothing for
 * every statement, several times slower than the serial plan for the service's spatial pages.
 */
function planSettings (conn: { query: (sql: string, cb: (err: Error | null) => void) => void }, done: (err: Error | null, conn: unknown) => void): void {
  conn.query('SET jit = off; SET max_parallel_workers_per_gather = 0', err => { done(err, conn) })
}

/**
 * What the database engine behind a pool can do, fixed when the pool is made: a PostgreSQL
 * server (the default) or the embedded PGlite (lib/embedded), which runs one statement at a
 * time on one connection, has no server-side cursors and, in its PostGIS build, no ST_AsMVT.
 */
export interface Engine {
  kind: 'postgres' | 'pglite'
  /** ST_AsMVT works (probed once at start). */
  mvt: boolean
  /** Server-side cursors (pg-query-stream) on a connection of their own. */
  cursors: boolean
}

const POSTGRES: Engine = Object.freeze({ kind: 'postgres', mvt: true, cursors: true })

// Each pool's engine, kept for the pool and every transaction on it.
const engines = new WeakMap<object, Engine>()

/** The engine of a pool or of a transaction on it. */
export function engineOf (db: Queryable): Engine {
  return engines.get(poolIdentity(db)) ?? POSTGRES
}

/**
 * Whether a pool is being or has been destroyed (knex `destroy`): work that was only waiting for
 * its turn (an after-commit announcement) is dropped then, instead of asking a closed pool.
 */
export const isClosed = (db: Db): boolean => poolDestroyed(db)

/** Marks a pool's engine (lib/embedded, once at start). */
export function setEngine (db: Db, engine: Engine): void {
  engines.set(poolIdentity(db), Object.freeze({ ...engine }))
}

/** Instruments a pool made elsewhere (lib/embedded) like createDb's. */
export function instrumentDb (db: Db): Db {
  instrument(db)
  return db
}

// The label set of each statement text seen (the hot statements have fixed texts), bounded.
// The label is one of STATEMENT_KINDS, never text taken from the statement. A long text (a folded
// write is 3 KB; a batched insert, whose text varies with its size, far more) is kept under its
// length and its two ends, so the map stays small and a fixed long text is read once; two texts
// alike there but of different kinds would only share a label.
const operations = new Map<string, { operation: string }>()
const operationKey = (sql: string): string => sql.length <= 400 ? sql : `${sql.length}:${sql.slice(0, 200)}\u0000${sql.slice(-200)}`
function operationOf (sql: string): { operation: string } {
  const key = operationKey(sql)
  let labels = operations.get(key)
  if (labels === undefined) {
    labels = { operation: statementKind(sql) }
    if (operations.size >= 2000) operations.clear()
    operations.set(key, labels)
  }
  return labels
}

/** database_query_duration_seconds, labelled by the statement's kind (lib/statement-kind.ts). */
function instrument (db: Db): void {
  const started = new Map<string, bigint>()
  db.on('query', (q: { __knexQueryUid?: string }) => {
    if (q.__knexQueryUid) started.set(q.__knexQueryUid, process.hrtime.bigint())
  })
  const finish = (_err: unknown, q: { __knexQueryUid?: string, sql?: string }) => {
    const uid = q.__knexQueryUid
    if (!uid) return
    const t0 = started.get(uid)
    started.delete(uid)
    if (t0 === undefined) return
    dbQueryDuration.observe(operationOf(q.sql ?? ''), Number(process.hrtime.bigint() - t0) / 1e9)
  }
  db.on('query-response', (_res: unknown, q: { __knexQueryUid?: string, sql?: string }) => finish(null, q))
  db.on('query-error', (err: unknown, q: { __knexQueryUid?: string, sql?: string }) => finish(err, q))
}

/** The pool, the before-COMMIT, after-commit and after-end callbacks of a transaction `withTransaction` opened. */
interface Opened { pool: Db, callbacks: Array<(pool: Db) => void>, before: Array<(tx: Tx) => Promise<void>>, ended: Array<(pool: Db) => Promise<void>> }
const opened = new WeakMap<Tx, Opened>()

/** Runs `fn` in a transaction on `db`, or inside the caller's transaction when `db` is one. */
export async function withTransaction<T> (db: Queryable, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db as Tx)
  const callbacks: Array<(pool: Db) => void> = []
  const ended: Array<(pool: Db) => Promise<void>> = []
  let result: T
  try {
    result = await (db as Knex).transaction(async tx => {
      const before: Array<(tx: Tx) => Promise<void>> = []
      opened.set(tx, { pool: db as Db, callbacks, before, ended })
      const value = await fn(tx)
      // In order, each once; one may register another.
      for (let i = 0; i < before.length; i++) await before[i](tx)
      return value
    })
  } catch (err) {
    if (ended.length > 0) await Promise.allSettled(ended.map(f => f(db as Db)))
    throw translatePgError(err)
  }
  if (ended.length > 0) await Promise.allSettled(ended.map(f => f(db as Db)))
  for (const cb of callbacks) cb(db as Db)
  return result
}

/**
 * Runs `fn` with each statement it makes on `db` cancelled after `ms` (a kind of request's own
 * bound, below the pool's: QUERY_STATEMENT_TIMEOUT_MS), in a transaction of its own whose SET
 * LOCAL ends with it; a cancelled statement becomes NOT_READY (translatePgError). In a caller's
 * transaction (which a SET LOCAL would outlive) or with `ms` 0, `fn` runs on `db` as it is.
 */
export function withStatementTimeout<T> (db: Queryable, ms: number, fn: (db: Queryable) => Promise<T>): Promise<T> {
  if (ms <= 0 || db.isTransaction) return fn(db)
  return withTransaction(db, async tx => {
    await prepared(tx, 'statement-timeout', "SELECT set_config('statement_timeout', ?, true)", [`${ms}ms`])
    return fn(tx)
  })
}

/** What a statement of caller-chosen cost needs to know of its request (a ServiceContext is one). */
export interface CallerCostContext {
  db: Queryable
  config: { queryStatementTimeoutMs: number }
  /** The one bound the request's such statements share (ServiceContext.sharedCost). */
  sharedCost?: { deadline: number | null }
}

/**
 * Runs `fn` under QUERY_STATEMENT_TIMEOUT_MS (withStatementTimeout on `ctx.db`), or under what is
 * left of the request's own budget when it has one: a GraphQL request whose root fields each run
 * such statements spends one bound in all, not one per field. Nothing left: NOT_READY at once.
 */
export async function withCallerCost<T> (ctx: CallerCostContext, fn: (db: Queryable) => Promise<T>): Promise<T> {
  const ms = ctx.config.queryStatementTimeoutMs
  const shared = ctx.sharedCost
  if (shared === undefined || ms <= 0) return withStatementTimeout(ctx.db, ms, fn)
  shared.deadline ??= performance.now() + ms
  const left = Math.floor(shared.deadline - performance.now())
  if (left <= 0) throw new AppError('NOT_READY', 'this request has spent its database time (QUERY_STATEMENT_TIMEOUT_MS for the whole request); ask for less in one request', { reason: 'statement timeout' })
  return withStatementTimeout(ctx.db, Math.min(ms, left), fn)
}

/**
 * Runs `fn` with the pool once the transaction `tx` has ended, by COMMIT or by ROLLBACK, and
 * waits for it before `withTransaction` returns or throws (a failure of `fn` is its own to
 * handle). Returns false, registering nothing, for a transaction `withTransaction` did not open.
 * For a record that must outlive the transaction's refusal (lib/license: a write refused at its
 * quota is audited): written in the transaction it would roll back with it, and written on the
 * pool while the transaction is open it would wait for a connection the transaction may hold
 * (embedded mode: the only one).
 */
export function afterEnd (tx: Tx, fn: (pool: Db) => Promise<void>): boolean {
  const entry = opened.get(tx)
  if (entry === undefined) return false
  entry.ended.push(fn)
  return true
}

/**
 * Runs `fn` in a savepoint of `tx`. What it registers with afterCommit and beforeCommit joins the
 * outer transaction only if the savepoint is released; what it registers with afterEnd runs at the
 * outer transaction's end either way. In a transaction opened elsewhere, a plain savepoint.
 */
export async function withSavepoint<T> (tx: Tx, fn: (sp: Tx) => Promise<T>): Promise<T> {
  const outer = opened.get(tx)
  if (outer === undefined) return await tx.transaction(fn)
  const mine: Opened = { pool: outer.pool, callbacks: [], before: [], ended: [] }
  try {
    const value = await tx.transaction(sp => { opened.set(sp, mine); return fn(sp) })
    outer.callbacks.push(...mine.callbacks)
    outer.before.push(...mine.before)
    return value
  } finally {
    outer.ended.push(...mine.ended)
  }
}

/**
 * Runs `fn` once what `db` writes is committed, with a pool: at once when `db` is a pool; after
 * the COMMIT of the transaction `db` is, when `withTransaction` opened it (never when it rolls
 * back). Returns false, calling nothing, for a transaction opened elsewhere: the caller decides.
 * A write nested in a caller's transaction (an automation run's effect) thus announces its change
 * when it is visible, from the pool, and not inside the transaction (a NOTIFY there would take the
 * database-wide notify lock at COMMIT).
 */
export function afterCommit (db: Queryable, fn: (pool: Db) => void): boolean {
  if (!db.isTransaction) { fn(db as Db); return true }
  const entry = opened.get(db as Tx)
  if (entry === undefined) return false
  entry.callbacks.push(fn)
  return true
}

/**
 * Opens `n` connections of the pool at once (each held until all are open, so they are distinct)
 * and loads PostGIS in each: a new backend spends tens of milliseconds of database CPU on its
 * first geometry function, which a worker would otherwise pay in its first runs. Best effort: errors are the caller's
 * to log, and a connection the pool later closes for idleness is opened cold again.
 */
export async function warmConnections (db: Db, n: number): Promise<void> {
  if (engineOf(db).kind !== 'postgres' || n <= 0) return
  let open = 0
  let release: () => void = () => {}
  const all = new Promise<void>(resolve => { release = resolve })
  await Promise.all(Array.from({ length: n }, () => db.transaction(async tx => {
    await tx.raw('SELECT ST_AsGeoJSON(NULL::geometry)')
    if (++open === n) release()
    // A pool smaller than n never opens them all: give up waiting after a second.
    await Promise.race([all, new Promise(resolve => setTimeout(resolve, 1000).unref())])
  })))
}

/**
 * Runs `fn` in the transaction `tx` just before its COMMIT (after everything the transaction's
 * own function did; not at all when it throws). Returns false, registering nothing, for a
 * transaction `withTransaction` did not open. Writes that hand their rows to a later statement of
 * the same transaction (lib/pipeline `deferChanges`) write them here when no statement took them.
 */
export function beforeCommit (tx: Tx, fn: (tx: Tx) => Promise<void>): boolean {
  const entry = opened.get(tx)
  if (entry === undefined) return false
  entry.before.push(fn)
  return true
}

/**
 * The constraint an error names, as the schema names it: on a Citus cluster the error comes from a
 * shard, whose constraints carry the shard id as a suffix (objects_tenant_public_id_102008), and
 * a shard's error relayed by the coordinator may carry the name in its message only.
 */
export function constraintOf (err: { constraint?: string, message?: string }): string | undefined {
  const name = err.constraint ?? /constraint "([^"]+)"/.exec(err.message ?? '')?.[1]
  return name?.replace(/_\d+$/, '')
}

/** SQLSTATE of a geometry ST_IsValidDetail refused in a write (objects_geometry, migration 202611280001). */
export const INVALID_GEOMETRY = 'PW002'

/**
 * The one place Postgres error codes become domain errors. Anything not listed stays as is and
 * becomes a 500 without leaking SQL.
 */
export function translatePgError (err: unknown): unknown {
  if (err instanceof AppError || typeof err !== 'object' || err === null) return err
  const e = err as { code?: string, constraint?: string, detail?: string, message?: string }
  switch (e.code) {
    case '23505': return conflict(constraintOf(e), e.detail)
    case '23503': return new AppError('VALIDATION_ERROR', 'a referenced resource does not exist', { field: constraintOf(e) ?? 'reference', reason: 'does not exist' })
    case '22P02': return new AppError('VALIDATION_ERROR', 'a value has the wrong form', { field: 'value', reason: 'invalid input syntax' })
    // Values that pass JSON Schema but that Postgres cannot hold: a timestamp outside its range
    // (year 0000), a NUL character in text or jsonb.
    case '22008': case '22007': return new AppError('VALIDATION_ERROR', 'a date or time is out of the supported range', { field: 'value', reason: 'date/time out of range' })
    case '22P05': case '22021': return new AppError('VALIDATION_ERROR', 'a text value contains a character that cannot be stored (NUL)', { field: 'value', reason: 'unsupported character' })
    case '40001': case '40P01': return new AppError('VERSION_CONFLICT', 'a concurrent change won; retry with the current version', {})
    // A cancelled statement: the pool's statement_timeout (DB_STATEMENT_TIMEOUT_MS), or an
    // operator's pg_cancel_backend. Told by its code alone: the message is in the server's
    // lc_messages language.
    case '57014': return new AppError('NOT_READY', 'the database did not answer within the statement timeout; ask for less (a smaller area, a higher zoom, fewer items)', { reason: 'statement timeout' })
    case INVALID_GEOMETRY: return invalidGeometry(e.detail)
    default:
      // Insufficient resources (class 53): no connection slot left (max_connections, a role's
      // CONNECTION LIMIT), out of memory, disk full. The server is there but cannot take this now.
      if (e.code?.startsWith('53') === true) return new AppError('NOT_READY', 'the database has no room for this request now (connections, memory or disk); retry shortly', { reason: 'database out of resources' })
      return databaseLost(e) ? databaseUnavailable() : err
  }
}

// Connection exceptions (class 08), the server shutting down or starting up (57P01-57P03), a
// socket refused, cut or already closed when a statement is written to it (the server's goodbye
// and the write crossing), its host not reachable or not resolved for now, and no pooled
// connection within the pool's acquire timeout.
const LOST_CODES = new Set(['57P01', '57P02', '57P03', 'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT',
  'EHOSTUNREACH', 'ENETUNREACH', 'ENOTCONN', 'EAI_AGAIN', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END', 'ERR_SOCKET_CLOSED'])

/** The database went away (restart, failover) or cannot be reached: worth a retry, not a 500. */
function databaseLost (e: { code?: string, name?: string, message?: string }): boolean {
  if (e.code !== undefined && (LOST_CODES.has(e.code) || e.code.startsWith('08'))) return true
  return e.name === 'KnexTimeoutError' || /^Connection terminated|is not queryable/.test(e.message ?? '')
}

// A write cut off with its connection may have committed: the client reads before it retries.
function databaseUnavailable (): AppError {
  return new AppError('NOT_READY', 'the database is unavailable; retry shortly (a write that got this answer may have been applied: read before retrying it)', { reason: 'database unavailable' })
}

// DETAIL is JSON: {reason (ST_IsValidDetail's), location [x, y] or null, repair?: why a repair was refused}.
function invalidGeometry (detail: string | undefined): AppError {
  const d = JSON.parse(detail ?? '{}') as { reason?: string, location?: [number, number] | null, repair?: string }
  const reason = d.reason ?? 'invalid geometry'
  const at = d.location == null ? '' : ` at [${d.location.join(', ')}]`
  const fix = d.repair === undefined ? 'fix it, or set geometry.makeValid on the object type to have it repaired' : `it cannot be repaired: ${d.repair}`
  return new AppError('VALIDATION_ERROR', `geometry is not valid (${reason}${at}); ${fix}`, {
    field: 'geometry', reason, location: d.location ?? null, ...(d.repair === undefined ? {} : { repair: d.repair })
  })
}

/** The field a unique index holds, so a 409 names what clashed. */
const UNIQUE_FIELDS: Record<string, string> = {
  object_types_tenant_key: 'key',
  workflows_tenant_key: 'key',
  rules_tenant_key: 'key',
  layers_tenant_slug: 'slug',
  automation_rules_tenant_slug: 'trigger.slug',
  automation_rules_tenant_live_slug: 'trigger.slug',
  objects_tenant_public_id: 'publicId'
}

function conflict (constraint: string | undefined, detail: string | undefined): AppError {
  const field = constraint === undefined ? undefined : UNIQUE_FIELDS[constraint]
  if (field === undefined) return new AppError('CONFLICT', 'a resource with the same unique key already exists', { constraint })
  // PostgreSQL's detail: Key (tenant_id, key)=(acme, pole) already exists.
  const value = /\)=\((?:[^,]*, )?(.*)\) already exists/.exec(detail ?? '')?.[1]
  return new AppError('CONFLICT', `${field} ${value === undefined ? '' : `"${value}" `}is already taken in this tenant; choose another`, { field, reason: 'already taken', ...(value === undefined ? {} : { value }), constraint })
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export function isUuid (s: string): boolean {
  return UUID_RE.test(s)
}

/** Positional bindings for knex.raw. */
export type Bindings = Knex.RawBinding[]

/**
 * A fixed-text statement run as a named prepared statement: each connection plans it once
 * instead of on every call. `name`
 * must belong to exactly one SQL text; use it only where the text never varies.
 */
export function prepared (db: Queryable, name: string, sql: string, bindings: Bindings): PromiseLike<any> {
  if (!direct(db, bindings)) return db.raw(sql, bindings).options({ name })
  return onConnection(db, name, sql, bindings)
}

const statementNames = new Map<string, string>()
/**
 * A prepared statement's name for a text built at run time from a few shapes (a list's sort and
 * filter, a tile's layer fields, an outcome's columns): `prefix.` and a digest of the text,
 * remembered per text so that a hot path does not hash it again on every call.
 */
export function statementName (prefix: string, text: string): string {
  let name = statementNames.get(text)
  if (name === undefined) {
    name = `${prefix}.${createHash('sha256').update(text).digest('base64url').slice(0, 22)}`
    if (statementNames.size >= 2000) statementNames.clear()
    statementNames.set(text, name)
  }
  return name
}

// The direct path for prepared statements: the hot reads (get by id, a cold tile) on the pool,
// and every prepared statement of a transaction (an automation run's claim, effect and outcome, a
// patch's lock and write). knex's query builder, runner and formatter cost tens of microseconds of
// CPU per statement (a quarter of a worker's CPU per run went to knex), and a fixed text needs
// none of them. On the pool the statement runs on a connection of knex's own pool; in a
// transaction on the transaction's own connection, which its knex client hands out (as it does to
// knex's runner). The 'query' / 'query-response' / 'query-error' events go to the client as knex
// sends them, so they reach the pool's and the transaction's listeners (the metrics and the
// tests' statement counts read them). PGlite and bindings that are not plain values (a knex Raw
// inlines SQL) keep knex's path.
const nativeTexts = new Map<string, string>()
let directQueries = 0

const plainValue = (v: unknown): boolean =>
  v === null || (typeof v !== 'object' && typeof v !== 'function' && v !== undefined) || v instanceof Date || Buffer.isBuffer(v) || Array.isArray(v)

/** Whether a statement on `db` with `bindings` can take the direct path. */
const direct = (db: Queryable, bindings: Bindings): boolean =>
  engineOf(db).kind === 'postgres' && bindings.every(plainValue)

/**
 * The same for a statement whose one row has one bytea column (a vector tile): resolves to its
 * bytes, read in binary (lib/fenced/pg.ts: no hex text, no string of the tile's size on the heap), in
 * the pieces they arrived in (`joinBytes` makes one buffer). None when there is no row or the
 * value is NULL or empty.
 */
export async function preparedBytes (db: Queryable, name: string, sql: string, bindings: Bindings): Promise<Buffer[]> {
  if (!direct(db, bindings)) {
    const r = await db.raw(sql, bindings).options({ name })
    const v = r.rows[0] === undefined ? null : Object.values(r.rows[0])[0]
    // node-postgres gives bytea as a Buffer, PGlite as a Uint8Array.
    return v instanceof Uint8Array && v.length > 0 ? [Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength)] : []
  }
  return onConnection(db, name, sql, bindings, true)
}

/**
 * The connection the last direct statement on a pool used, kept for the next one: tarn's
 * acquire and release cost every statement two pending operations, each with a promise chain and
 * a timer, and an asynchronous validation; a statement that finds a kept connection takes it with
 * none of that (docs/performance.md). A kept connection goes back to the pool as soon as anyone
 * else asks the pool for one (a transaction, knex's own queries, a second direct statement in
 * flight), when the pool is destroyed, when the pool has callers waiting as a statement ends, and
 * after IDLE_LANE_MS with no direct statement. A connection knex marked broken is never kept.
 */
interface Lane { conn: PoolConnection | null, idle: NodeJS.Timeout }
const lanes = new WeakMap<object, Lane>()
const IDLE_LANE_MS = 100

function laneOf (db: Db): Lane | null {
  const pool = tarnPool(db)
  if (pool === null) return null
  let lane = lanes.get(pool)
  if (lane === undefined) {
    const giveBack = (): void => {
      const c = l.conn
      if (c === null) return
      l.conn = null
      void release(db, c)
    }
    const l: Lane = { conn: null, idle: setTimeout(giveBack, IDLE_LANE_MS).unref() }
    onPoolDemand(db, giveBack)
    lanes.set(pool, lane = l)
  }
  return lane
}

/** A connection for a direct statement: the pool's kept one when it has one, else the pool's. */
function takeConnection (db: Queryable, lane: Lane | null): Promise<PoolConnection> | PoolConnection {
  const kept = lane?.conn ?? null
  if (kept === null) return acquire(db)
  ;(lane as Lane).conn = null
  if (!isDiscarded(kept)) return kept
  // Broken while kept (the server went away): the pool destroys it when it next validates it.
  return release(db, kept).then(() => acquire(db))
}

/** After a direct statement: keeps the connection for the next one, or gives it back to the pool. */
async function putConnection (db: Queryable, lane: Lane | null, conn: PoolConnection): Promise<void> {
  if (lane !== null && lane.conn === null && !isDiscarded(conn) && pendingAcquires(db) === 0) {
    lane.conn = conn
    lane.idle.refresh()
    return
  }
  await release(db, conn)
}

async function onConnection (db: Queryable, name: string, sql: string, bindings: Bindings, bytes = false): Promise<any> {
  let text = nativeTexts.get(name)
  if (text === undefined) {
    text = db.raw(sql, bindings).toSQL().toNative().sql
    if (nativeTexts.size >= 1000) nativeTexts.clear()
    nativeTexts.set(name, text)
  }
  // What knex's transaction client refuses, refused alike: a statement after COMMIT or ROLLBACK.
  if (db.isTransaction === true && (db as Tx).isCompleted()) throw new Error(`Transaction query already complete: ${name}`)
  const lane = db.isTransaction === true ? null : laneOf(db as Db)
  const conn = await takeConnection(db, lane)
  const q = { sql: text, bindings, name, uid: `direct-${++directQueries}` }
  emitQueryEvent(db, 'query', conn, q)
  try {
    if (bytes) {
      const value = await queryBytes(conn, name, text, bindings as unknown[])
      emitQueryEvent(db, 'query-response', conn, q, { command: 'SELECT', rowCount: 1, rows: [] })
      return value
    }
    const r = await namedQuery(conn, name, text, bindings as unknown[])
    emitQueryEvent(db, 'query-response', conn, q, r)
    return r
  } catch (err) {
    emitQueryEvent(db, 'query-error', conn, q, err)
    throw err
  } finally {
    await putConnection(db, lane, conn)
  }
}

/**
 * Point reads coalesced: the reads of one kind asked on the pool in the same turn of the event
 * loop (a burst of concurrent GETs by id) are answered by one statement per group (a tenant), so
 * that k requests cost one round trip, one plan execution and one wake-up of a backend instead of
 * k. A read waits for nothing but the end of the current turn (setImmediate), so a lone request
 * is not slowed. Reads in a transaction (or on PGlite) keep their own statement: they must see
 * the transaction. `load` answers a group's keys as a map; a key it leaves out answers undefined.
 */
export function coalesced<R> (load: (db: Queryable, group: string, keys: string[]) => Promise<Map<string, R>>, max = 100): (db: Queryable, group: string, key: string) => Promise<R | undefined> {
  interface Batch { keys: string[], waiters: Array<{ key: string, resolve: (r: R | undefined) => void, reject: (e: unknown) => void }> }
  const open = new WeakMap<Queryable, Map<string, Batch>>()
  const flush = (db: Queryable, group: string, b: Batch): void => {
    load(db, group, b.keys).then(found => { for (const w of b.waiters) w.resolve(found.get(w.key)) }, err => { for (const w of b.waiters) w.reject(err) })
  }
  return (db, group, key) => {
    if (db.isTransaction === true || !direct(db, [])) return load(db, group, [key]).then(found => found.get(key))
    let groups = open.get(db)
    if (groups === undefined) open.set(db, groups = new Map())
    let b = groups.get(group)
    if (b === undefined || b.keys.length >= max) {
      const batch: Batch = b = { keys: [], waiters: [] }
      const gs = groups
      gs.set(group, batch)
      setImmediate(() => { if (gs.get(group) === batch) gs.delete(group); flush(db, group, batch) })
    }
    const batch = b
    if (!batch.waiters.some(w => w.key === key)) batch.keys.push(key)
    return new Promise((resolve, reject) => { batch.waiters.push({ key, resolve, reject }) })
  }
}

// The lengths a coalesced batch's key list is padded to (coalesced's batch is at most 100).
const KEY_LIST_SIZES = [1, 2, 4, 8, 16, 32, 64, 100]

/**
 * A coalesced batch's keys as a list of fixed length for a prepared statement: padded with nulls
 * to the next of a few sizes, so that each size is one text. PostgreSQL keeps a prepared
 * statement's generic plan only while it costs no more than the custom plans it has seen; a list
 * whose length the generic plan knows (not one array parameter, costed as ten elements whatever
 * it holds) costs the same in both, so the plan is made once per connection and size, not on
 * every call. A null key matches nothing.
 */
export function keyList<K> (keys: K[]): { size: number, keys: Array<K | null> } {
  const size = KEY_LIST_SIZES.find(n => n >= keys.length) ?? keys.length
  return { size, keys: keys.length === size ? keys : [...keys, ...Array<null>(size - keys.length).fill(null)] }
}

/** One SQL statement with its bindings, built by a module's sql.ts and run by someone else. */
export interface Statement { sql: string, bindings: Bindings, name?: string }

/**
 * Runs independent data-modifying statements as ONE statement (one round trip): all but the
 * last become WITH clauses. PostgreSQL runs every data-modifying CTE to completion.
 */
export async function runStatements (db: Queryable, statements: Statement[]): Promise<void> {
  if (statements.length === 0) return
  const last = statements[statements.length - 1]
  const ctes = statements.slice(0, -1).map((s, i) => `s${i} AS (${s.sql})`)
  const sql = `${ctes.length > 0 ? `WITH ${ctes.join(', ')} ` : ''}${last.sql}`
  const bindings = [...statements.slice(0, -1).flatMap(s => s.bindings), ...last.bindings]
  // A composition of named statements has a fixed text too, so it can be prepared as well.
  const names = statements.map(s => s.name)
  if (names.every(n => n !== undefined)) await prepared(db, names.join('+'), sql, bindings)
  else await db.raw(sql, bindings)
}
