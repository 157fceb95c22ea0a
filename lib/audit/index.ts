import type { Actor, ServiceContext } from '../context.js'
import type { Db, Statement } from '../db.js'
import { runStatements } from '../db.js'
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

export async function recordForContext (ctx: ServiceContext, event: sql.NewAuditEvent): Promise<void> {
  await recordStandalone(ctx.db, ctx.tenantId, ctx.actor, event, t => ctx.sequencer?.kick(t))
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
