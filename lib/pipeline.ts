import type { ServiceContext } from './context.js'
import type { Tx } from './db.js'
import { prepared, runStatements, withTransaction, type Bindings, type Statement } from './db.js'
import * as access from './access/index.js'
import * as audit from './audit/index.js'
import * as outbox from './outbox/index.js'
import * as counters from './counters/index.js'
import { ensureTenant, rememberTenant } from './tenants/index.js'

/**
 * The one write pipeline. Every change to tenant data goes through `runWrite`:
 *
 *   authorize -> before-hooks (license) -> BEGIN -> the operation's own SQL (row + history)
 *   -> audit events, outbox events and counter deltas (one round trip, or folded into the
 *   operation's statement by `fold`) -> in-transaction hooks
 *   -> [sync audit sequencing] -> COMMIT -> after-commit hooks -> audit sequencing kick
 *
 * Invariant: a write that throws anywhere before COMMIT leaves nothing behind: no row, no
 * history version, no audit event, no outbox event. Later capabilities hook in through
 * `writeHooks`, never by wrapping an operation.
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

export interface WriteHooks {
  before: Array<(ctx: ServiceContext, spec: WriteSpec) => Promise<void>>
  /** Changes of a hook's own (e.g. the license's monthly usage delta), written with the operation's. */
  record: Array<(ctx: ServiceContext, spec: WriteSpec) => Change[]>
  inTransaction: Array<(ctx: ServiceContext, tx: Tx, spec: WriteSpec, changes: Change[]) => Promise<void>>
  afterCommit: Array<(ctx: ServiceContext, spec: WriteSpec, changes: Change[]) => void>
}

export const writeHooks: WriteHooks = { before: [], record: [], inTransaction: [], afterCommit: [] }

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
}

export interface WriteScope {
  tx: Tx
  /** Records an audit event and/or a domain event for this write. */
  record (change: Change): void
  /** Runs a statement with its changes folded in (one round trip); returns the results in order. */
  fold<R> (statement: FoldedStatement): Promise<R[]>
}

export async function runWrite<T> (ctx: ServiceContext, spec: WriteSpec, operation: (w: WriteScope) => Promise<T>): Promise<T> {
  await access.authorize(ctx, spec.resource, spec.action)
  for (const hook of writeHooks.before) await hook(ctx, spec)
  const changes: Change[] = [] // every change of the write, as hooks see them
  const result = await withTransaction(ctx.db, async tx => {
    await ensureTenant(tx, ctx.tenantId)
    const recorded: Change[] = [] // those still to be written
    const value = await operation({
      tx,
      record: c => { changes.push(c); recorded.push(c) },
      fold: async <R>(s: FoldedStatement) => {
        const rows = await runFolded(ctx, tx, s)
        for (const r of rows) changes.push(r.change)
        return rows.map(r => r.result as R)
      }
    })
    for (const hook of writeHooks.record) for (const c of hook(ctx, spec)) { changes.push(c); recorded.push(c) }
    // Audit, outbox and counter rows in one round trip.
    await runStatements(tx, [
      audit.recordStatement(ctx.tenantId, ctx.actor, recorded.flatMap(c => c.audit ? [c.audit] : [])),
      outbox.emitStatement(ctx.tenantId, recorded.flatMap(c => c.event ? [c.event] : []), ctx.causation),
      counters.addStatement(ctx.tenantId, recorded.flatMap(c => c.counts ?? []))
    ].filter((s): s is Statement => s !== null))
    for (const hook of writeHooks.inTransaction) await hook(ctx, tx, spec, changes)
    if (ctx.config.auditSequencing === 'sync') await audit.sequencePending(tx, ctx.tenantId)
    return value
  })
  rememberTenant(ctx.tenantId)
  for (const hook of writeHooks.afterCommit) hook(ctx, spec, changes)
  if (ctx.config.auditSequencing === 'async') void ctx.sequencer?.kick(ctx.tenantId)
  return result
}

/** One statement: the operation's CTEs, its change rows `ch`, and the inserts reading them. */
async function runFolded (ctx: ServiceContext, tx: Tx, s: FoldedStatement): Promise<Array<{ result: unknown, change: Change }>> {
  const part = (key: string) => `(SELECT ch.change->'${key}', ch.n FROM ch WHERE ch.change->'${key}' IS NOT NULL) AS e(v, n)`
  const writes = [
    audit.recordFromStatement(ctx.tenantId, ctx.actor, part('audit')),
    outbox.emitFromStatement(ctx.tenantId, part('event'), ctx.causation),
    counters.addFromStatement(ctx.tenantId, "(SELECT d FROM ch, jsonb_array_elements(coalesce(ch.change->'counts', '[]')) d) AS e(v)")
  ]
  const text = `WITH ${[...s.ctes, `ch AS MATERIALIZED (${s.select})`, ...writes.map((w, i) => `w${i} AS (${w.sql})`)].join(',\n')}
    SELECT ch.result, ch.change FROM ch ORDER BY ch.n`
  const bindings = [...s.bindings, ...writes.flatMap(w => w.bindings)]
  const r = await (s.name === undefined ? tx.raw(text, bindings) : prepared(tx, `${s.name}+changes`, text, bindings))
  return r.rows
}
