import type { Actor, ServiceContext } from '../context.js'
import type { Db, Statement, Tx } from '../db.js'
import { afterEnd, runStatements } from '../db.js'
import * as sql from './sql.js'

export type { NewAuditEvent } from './sql.js'
export { Sequencer, sequencePending } from './sequencer.js'
export { eventHash, GENESIS_HASH } from './hash.js'

/**
 * The statement that writes events unsequenced; the write pipeline runs it inside the write's
 * transaction, together with the outbox's (lib/db runStatements).
 */
export function recordStatement (tenantId: string, actor: Actor | null, events: sql.NewAuditEvent[]): Statement | null {
  return events.length === 0 ? null : sql.insertEventsStatement(tenantId, hashedActor(actor), events)
}

/** The same events read from rows `e(v, n)` of the statement they are folded into (lib/pipeline). */
export function recordFromStatement (tenantId: string, actor: Actor | null, rows: string): Statement {
  return sql.insertEventsFromStatement(tenantId, hashedActor(actor), rows)
}

/** Only sub and roles are part of an event (and of its hash). */
function hashedActor (actor: Actor | null): { sub: string, roles: string[] } | null {
  return actor === null ? null : { sub: actor.sub, roles: actor.roles }
}

/**
 * For events about a request that is itself refused (auth failures, permission denials): they
 * are written in their own (autocommitted) statement so the refusal does not roll them back.
 */
export async function recordStandalone (db: Db, tenantId: string, actor: Actor | null, event: sql.NewAuditEvent, kick?: (tenantId: string) => unknown): Promise<void> {
  await runStatements(db, [sql.insertEventsStatement(tenantId, hashedActor(actor), [event])])
  kick?.(tenantId)
}

/**
 * A refusal's event (permission.denied, license.limit_exceeded) by the caller of `ctx`, written so
 * the refusal does not take it back. Refused inside a transaction that withTransaction opened
 * (`within`, by default ctx.db when it is one: an automation run's effect), it is written on the
 * pool once that transaction has ended, by COMMIT or ROLLBACK (lib/db afterEnd), before the
 * transaction's caller sees the error: in the transaction it would roll back with the write, and
 * on the pool while the transaction is open it could wait for a connection the transaction holds.
 * The registration happens before this function first awaits, so a caller may throw right after
 * calling it. Otherwise it is written at once, in its own statement.
 */
export async function recordForContext (ctx: ServiceContext, event: sql.NewAuditEvent, within?: Tx): Promise<void> {
  const write = (db: Db) => recordStandalone(db, ctx.tenantId, ctx.actor, event, t => ctx.sequencer?.kick(t))
  const tx = within ?? (ctx.db.isTransaction === true ? ctx.db as Tx : undefined)
  if (tx !== undefined && afterEnd(tx, pool => write(pool).catch(err => ctx.log.error({ err, type: event.type }, 'could not audit a refusal')))) return
  await write(ctx.db)
}

// Read side: list and proof (GET /v1/audit/events, GET /v1/audit/events/{id}/proof).
export * as schema from './schema.js'
export { listEvents, authorizeChain, type ListEventsQuery } from './list.js'
export { proveEvent, recomputeHash, ChainWalker, PROOF_BATCH, type Proof } from './proof.js'
export { toEventDto, type AuditEventDto } from './dto.js'
export { treeHead, inclusionProof, consistencyProof, type InclusionProof, type ConsistencyProof } from './tree.js'
export { signTreeHead, treeHeadMessage, treeSigner, TREE_HEAD_CONTEXT, type SignedTreeHead } from './signing.js'
export { leafHash, nodeHash, EMPTY_ROOT } from './merkle.js'
export { rebuildTree } from './sql.js'
