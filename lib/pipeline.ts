import type { ServiceContext } from './context.js'
import type { Queryable, Tx } from './db.js'
import { afterCommit, beforeCommit, prepared, runStatements, translatePgError, withTransaction, type Bindings, type Statement } from './db.js'
import * as access from './access/index.js'
import * as audit from './audit/index.js'
import * as outbox from './outbox/index.js'
import * as counters from './counters/index.js'
import { ensureTenant, isKnownTenant, rememberTenant } from './tenants/index.js'

/**
 * The one write pipeline. Every change to tenant data goes through `runWrite`:
 *
 *   authorize -> before-hook (license) -> BEGIN -> the operation's own SQL (row + history)
 *   -> audit events, outbox events and counter deltas (one round trip, or folded into the
 *   operation's statement by `fold`) -> in-transaction hook (license quota)
 *   -> [sync audit sequencing] -> COMMIT -> the outbox announces its events -> audit sequencing kick
 *
 * `runStatementWrite` is the same pipeline for a write that is one folded statement: when nothing
 * else must run in its transaction, the statement runs alone (autocommit: atomic on its own), one
 * round trip instead of BEGIN, statement, COMMIT; otherwise it falls back to `runWrite`.
 *
 * A write nested in a caller's transaction with `ctx.deferChanges` leaves its audit, outbox and
 * counter rows to the transaction's next folded statement by the same tenant, actor and causation
 * (an automation run's outcome), or to just before COMMIT: same transaction, one round trip less.
 *
 * Invariant: a write that throws anywhere before COMMIT leaves nothing behind: no row, no
 * history version, no audit event, no outbox event. Other modules take part through the
 * context's `hooks.write` (lib/modules.ts), never by wrapping an operation.
 */

export interface WriteSpec {
  resource: access.Resource
  action: access.Action
  /** A license limit this write counts against (e.g. object_count on create). */
  limit?: string
  /** How many units of `limit` this write uses (a batch create: one per object); 1 when absent. */
  units?: number
}

export interface Change {
  audit?: audit.NewAuditEvent
  event?: outbox.DomainEvent
  /** Counter deltas (lib/counters), e.g. live objects per type. */
  counts?: counters.CounterDelta[]
}

/**
 * A check that a one-statement write carries inside its statement instead of running it apart in
 * the write's transaction: a boolean SQL expression, evaluated once after the operation's change
 * rows exist and before the write's counter deltas are inserted. It may read `deltas(counter,
 * bucket, delta)`, the write's own counter deltas. To refuse, or to ask for the write to run as
 * a transaction instead, it raises (SQLSTATE RUN_IN_TRANSACTION for the latter).
 */
export interface StatementCheck { sql: string, bindings: Bindings, name: string }

/** SQLSTATE a StatementCheck raises to have the write run again by `runWrite` (nothing was written). */
export const RUN_IN_TRANSACTION = 'PW001'

export type InTransactionHook = ((ctx: ServiceContext, tx: Tx, spec: WriteSpec, changes: Change[]) => Promise<void>) & {
  /**
   * For a one-statement write: 'none' when the hook has nothing to do for it, or a check to carry
   * in the statement. A hook without this (or answering null) makes every write a transaction.
   */
  inStatement?: (ctx: ServiceContext, spec: WriteSpec) => Promise<StatementCheck | 'none' | null>
}

/** What another module adds to every write (lib/license: expiry, monthly usage, quotas). */
export interface WriteHooks {
  before: (ctx: ServiceContext, spec: WriteSpec) => Promise<void>
  /** Changes of the hook's own (the license's monthly usage delta), written with the operation's. */
  record: (ctx: ServiceContext, spec: WriteSpec) => Change[]
  inTransaction: InTransactionHook
}

/**
 * An operation statement that carries its own changes: data-modifying CTEs, then a SELECT
 * yielding one row per change with columns `n` (order), `result` (what the operation returns)
 * and `change` (jsonb: {audit?, event?, counts?} in the shapes of Change). The pipeline adds the
 * audit, outbox and counter inserts as further CTEs reading those rows: the whole write is one
 * statement. Its text must not use the jsonb `?` operators (they read as bindings).
 */
export interface FoldedStatement {
  ctes: string[]
  select: string
  bindings: Bindings
  /** Set when the text is fixed: the composition is then a prepared statement. */
  name?: string
  /** Turns a database error of this statement into the operation's own (before generic translation). */
  onError?: (err: { code?: string, constraint?: string, detail?: string, message?: string }) => unknown
}

export interface WriteScope {
  tx: Tx
  /** Records an audit event and/or a domain event for this write. */
  record (change: Change): void
  /** Runs a statement with its changes folded in (one round trip); returns the results in order. */
  fold<R> (statement: FoldedStatement): Promise<R[]>
}

export async function runWrite<T> (ctx: ServiceContext, spec: WriteSpec, operation: (w: WriteScope) => Promise<T>): Promise<T> {
  await guard(ctx, spec)
  return transact(ctx, spec, operation)
}

/**
 * A write that is one folded statement. `prepare` builds it, reading through the pool only
 * (nothing written, no lock needed), or answers null when the write needs its transaction.
 * The statement runs alone in autocommit when the tenant row is known to exist, no record hook
 * adds changes, audit sequencing is async and every in-transaction hook has nothing to do or
 * folds its check into the statement (`inStatement`). Otherwise, or when a folded check raises
 * RUN_IN_TRANSACTION, the write runs as `runWrite(ctx, spec, operation)`; `operation` must write
 * what the statement writes. Either way the same rows, audit, outbox and counter guarantees hold.
 */
export async function runStatementWrite<R> (ctx: ServiceContext, spec: WriteSpec, prepare: () => Promise<FoldedStatement | null>, operation: (w: WriteScope) => Promise<R[]>): Promise<R[]> {
  await guard(ctx, spec)
  const checks = await statementChecks(ctx, spec)
  const s = checks === null ? null : await prepare()
  if (s === null || checks === null) return transact(ctx, spec, operation)
  let rows: Array<{ result: unknown, change: Change }>
  try {
    rows = await runFolded(ctx, ctx.db, s, checks)
  } catch (err) {
    if ((err as { code?: string }).code === RUN_IN_TRANSACTION) return transact(ctx, spec, operation)
    throw translatePgError(err)
  }
  finish(ctx, rows.map(r => r.change))
  return rows.map(r => r.result as R)
}

/** The checks a lone statement must carry, or null when the write needs its transaction. */
async function statementChecks (ctx: ServiceContext, spec: WriteSpec): Promise<StatementCheck[] | null> {
  if (ctx.config.auditSequencing === 'sync' || !isKnownTenant(ctx.tenantId)) return null
  const hooks = ctx.hooks.write
  if (hooks.record(ctx, spec).length > 0) return null
  const c = hooks.inTransaction.inStatement === undefined ? null : await hooks.inTransaction.inStatement(ctx, spec)
  if (c === null) return null
  return c === 'none' ? [] : [c]
}

async function guard (ctx: ServiceContext, spec: WriteSpec): Promise<void> {
  await access.authorize(ctx, spec.resource, spec.action)
  await ctx.hooks.write.before(ctx, spec)
}

/**
 * The checks `runWrite` makes before its transaction (authorization, the before-hooks: an
 * expired license's LICENSE_EXPIRED), for an effect that writes nothing here but must be refused
 * as a write would: an outgoing webhook attempt of an automation run (lib/automation webhook.ts).
 */
export const assertMayWrite: (ctx: ServiceContext, spec: WriteSpec) => Promise<void> = guard

async function transact<T> (ctx: ServiceContext, spec: WriteSpec, operation: (w: WriteScope) => Promise<T>): Promise<T> {
  const changes: Change[] = [] // every change of the write, as hooks see them
  const nested = ctx.db.isTransaction === true
  const result = await withTransaction(ctx.db, async tx => {
    await ensureTenant(tx, ctx.tenantId)
    const recorded: Change[] = [] // those still to be written
    const value = await operation({
      tx,
      record: c => { changes.push(c); recorded.push(c) },
      fold: async <R>(s: FoldedStatement) => {
        const rows = await runFolded(ctx, tx, s, [])
        for (const r of rows) changes.push(r.change)
        return rows.map(r => r.result as R)
      }
    })
    for (const c of ctx.hooks.write.record(ctx, spec)) { changes.push(c); recorded.push(c) }
    // Audit, outbox and counter rows in one round trip, or handed to the transaction's next
    // folded statement (a nested write that asked for it: ctx.deferChanges).
    if (!(nested && ctx.deferChanges === true && await defer(ctx, spec, tx, recorded))) await writeChanges(ctx, tx, recorded)
    await ctx.hooks.write.inTransaction(ctx, tx, spec, changes)
    if (ctx.config.auditSequencing === 'sync') await audit.sequencePending(tx, ctx.tenantId)
    return value
  })
  rememberTenant(ctx.tenantId)
  finish(ctx, changes)
  return result
}

async function writeChanges (ctx: ServiceContext, tx: Tx, recorded: Change[]): Promise<void> {
  await runStatements(tx, [
    audit.recordStatement(ctx.tenantId, ctx.actor, recorded.flatMap(c => c.audit ? [c.audit] : [])),
    outbox.emitStatement(ctx.tenantId, recorded.flatMap(c => c.event ? [c.event] : []), ctx.causation),
    counters.addStatement(ctx.tenantId, recorded.flatMap(c => c.counts ?? []))
  ].filter((s): s is Statement => s !== null))
}

/**
 * Changes of nested writes waiting in their transaction (ctx.deferChanges): the next folded
 * statement of that transaction by the same tenant, actor and causation writes them as its first
 * change rows (one round trip less: an automation run's effect and its outcome); else they are
 * written before COMMIT (lib/db beforeCommit). Either way in the write's transaction, so they
 * commit with it or not at all, and in the order the writes made them.
 */
interface Deferred { ctx: ServiceContext, identity: string, changes: Change[] }
const deferred = new WeakMap<Tx, Deferred>()

const identityOf = (ctx: ServiceContext): string =>
  JSON.stringify([ctx.tenantId, ctx.actor.sub, ctx.actor.roles, ctx.causation ?? null])

/**
 * Defers `recorded` when nothing in the transaction reads them before they would be written:
 * async audit sequencing, and no in-transaction hook with anything to do for this write (such a
 * hook, the license quota, reads the write's counter deltas). False: write them now.
 */
async function defer (ctx: ServiceContext, spec: WriteSpec, tx: Tx, recorded: Change[]): Promise<boolean> {
  if (ctx.config.auditSequencing === 'sync') return false
  const hook = ctx.hooks.write.inTransaction
  if (hook.inStatement === undefined || await hook.inStatement(ctx, spec) !== 'none') return false
  const identity = identityOf(ctx)
  const held = deferred.get(tx)
  if (held !== undefined) {
    if (held.identity !== identity) return false
    held.changes.push(...recorded)
    return true
  }
  if (!beforeCommit(tx, flushDeferred)) return false
  deferred.set(tx, { ctx, identity, changes: [...recorded] })
  return true
}

/** Writes the transaction's deferred changes, if any are still waiting. */
async function flushDeferred (tx: Tx): Promise<void> {
  const held = deferred.get(tx)
  if (held === undefined) return
  deferred.delete(tx)
  await writeChanges(held.ctx, tx, held.changes)
}

/** The deferred changes a folded statement by `ctx` on `db` writes as its own (others are flushed first). */
async function takeDeferred (ctx: ServiceContext, db: Queryable): Promise<Change[]> {
  if (db.isTransaction !== true) return []
  const held = deferred.get(db as Tx)
  if (held === undefined) return []
  if (held.identity !== identityOf(ctx)) { await flushDeferred(db as Tx); return [] }
  deferred.delete(db as Tx)
  return held.changes
}

/**
 * After COMMIT: the outbox announces the write's events (lib/outbox `announceCommitted`: the
 * worker's dispatch and the layers' change counters listen) and the audit sequencing kick. A
 * write inside a caller's transaction (ctx.db is one: an automation run's effect and outcome) has
 * not committed yet when it returns: both wait for that transaction's COMMIT, with the pool.
 */
function finish (ctx: ServiceContext, changes: Change[]): void {
  const emitted = changes.some(c => c.event !== undefined)
  const run = (c: ServiceContext) => {
    if (emitted) outbox.announceCommitted(c.db, c.tenantId, c.log)
    if (c.config.auditSequencing === 'async') void c.sequencer?.kick(c.tenantId)
  }
  if (!afterCommit(ctx.db, pool => run({ ...ctx, db: pool }))) run(ctx)
}

/**
 * One statement: the operation's CTEs, its change rows `ch`, the checks (`gate`, which the
 * counter insert reads, so they run before the write's own deltas exist) and the inserts reading
 * the change rows. On `db` (a transaction, or the pool: autocommit).
 */
async function runFolded (ctx: ServiceContext, db: Queryable, s: FoldedStatement, checks: StatementCheck[]): Promise<Array<{ result: unknown, change: Change }>> {
  const held = await takeDeferred(ctx, db)
  const part = (key: string) => `(SELECT ch.change->'${key}', ch.n FROM ch WHERE ch.change->'${key}' IS NOT NULL) AS e(v, n)`
  const gated = checks.length > 0
  const writes = [
    audit.recordFromStatement(ctx.tenantId, ctx.actor, part('audit')),
    outbox.emitFromStatement(ctx.tenantId, part('event'), ctx.causation),
    counters.addFromStatement(ctx.tenantId, `(SELECT d FROM ch, jsonb_array_elements(coalesce(ch.change->'counts', '[]')) d${gated ? ', gate WHERE gate.ok' : ''}) AS e(v)`)
  ]
  const gate = gated
    ? [`deltas AS (SELECT d->>'counter' AS counter, coalesce(d->>'bucket', '') AS bucket, (d->>'delta')::bigint AS delta
        FROM ch, jsonb_array_elements(coalesce(ch.change->'counts', '[]')) d)`,
      `gate AS MATERIALIZED (SELECT ${checks.map(c => `(${c.sql})`).join(' AND ')} AS ok)`]
    : []
  // Deferred changes of earlier writes come first (n below the statement's own), and are not
  // results of this statement.
  const rows = held.length === 0
    ? s.select
    : `SELECT o.n::bigint AS n, o.result, o.change, false AS held FROM (${s.select}) o
      UNION ALL SELECT d.n - 4294967296, NULL, d.change, true FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS d(change, n)`
  const text = `WITH ${[...s.ctes, `ch AS MATERIALIZED (${rows})`, ...gate, ...writes.map((w, i) => `w${i} AS (${w.sql})`)].join(',\n')}
    SELECT ch.result, ch.change FROM ch${held.length === 0 ? '' : ' WHERE NOT ch.held'} ORDER BY ch.n`
  const bindings = [...s.bindings, ...(held.length === 0 ? [] : [JSON.stringify(held)]), ...checks.flatMap(c => c.bindings), ...writes.flatMap(w => w.bindings)]
  const name = s.name === undefined ? undefined : [`${s.name}+changes${held.length === 0 ? '' : '+held'}`, ...checks.map(c => c.name)].join('+')
  try {
    const r = await (name === undefined ? db.raw(text, bindings) : prepared(db, name, text, bindings))
    return r.rows
  } catch (err) {
    throw s.onError?.(err as { code?: string }) ?? err
  }
}
