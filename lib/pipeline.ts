import type { ServiceContext } from './context.js'
import type { Tx } from './db.js'
import { runStatements, withTransaction, type Statement } from './db.js'
import * as access from './access/index.js'
import * as audit from './audit/index.js'
import * as outbox from './outbox/index.js'
import * as counters from './counters/index.js'
import { ensureTenant, rememberTenant } from './tenants/index.js'

/**
 * The one write pipeline. Every change to tenant data goes through `runWrite`:
 *
 *   authorize -> before-hooks (license) -> BEGIN -> the operation's own SQL (row + history)
 *   -> audit events, outbox events and counter deltas (one round trip) -> in-transaction hooks
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

export interface WriteScope {
  tx: Tx
  /** Records an audit event and/or a domain event for this write. */
  record (change: Change): void
}

export async function runWrite<T> (ctx: ServiceContext, spec: WriteSpec, operation: (w: WriteScope) => Promise<T>): Promise<T> {
  await access.authorize(ctx, spec.resource, spec.action)
  for (const hook of writeHooks.before) await hook(ctx, spec)
  const changes: Change[] = []
  const result = await withTransaction(ctx.db, async tx => {
    await ensureTenant(tx, ctx.tenantId)
    const value = await operation({ tx, record: c => { changes.push(c) } })
    for (const hook of writeHooks.record) changes.push(...hook(ctx, spec))
    // Audit, outbox and counter rows in one round trip.
    await runStatements(tx, [
      audit.recordStatement(ctx.tenantId, ctx.actor, changes.flatMap(c => c.audit ? [c.audit] : [])),
      outbox.emitStatement(ctx.tenantId, changes.flatMap(c => c.event ? [c.event] : [])),
      counters.addStatement(ctx.tenantId, changes.flatMap(c => c.counts ?? []))
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
