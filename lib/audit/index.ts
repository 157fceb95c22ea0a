import type { Actor, ServiceContext } from '../context.js'
import type { Db, Queryable } from '../db.js'
import { withTransaction } from '../db.js'
import * as sql from './sql.js'

export type { NewAuditEvent } from './sql.js'
export { Sequencer, sequencePending } from './sequencer.js'
export { eventHash, GENESIS_HASH } from './hash.js'

/** Writes events unsequenced, inside the caller's transaction (the write pipeline's). */
export async function recordInTransaction (tx: Queryable, tenantId: string, actor: Actor | null, events: sql.NewAuditEvent[]): Promise<void> {
  await sql.insertEvents(tx, tenantId, actor === null ? null : { sub: actor.sub, roles: actor.roles }, events)
}

/**
 * For events about a request that is itself refused (auth failures, permission denials): they
 * are written in their own transaction so the refusal does not roll them back.
 */
export async function recordStandalone (db: Db, tenantId: string, actor: Actor | null, event: sql.NewAuditEvent, kick?: (tenantId: string) => unknown): Promise<void> {
  await withTransaction(db, tx => recordInTransaction(tx, tenantId, actor, [event]))
  kick?.(tenantId)
}

export async function recordForContext (ctx: ServiceContext, event: sql.NewAuditEvent): Promise<void> {
  await recordStandalone(ctx.db, ctx.tenantId, ctx.actor, event, t => ctx.sequencer?.kick(t))
}

// Read side: list and proof (GET /v1/audit/events, GET /v1/audit/events/{id}/proof).
export * as schema from './schema.js'
export { listEvents, authorizeChain, type ListEventsQuery } from './list.js'
export { proveEvent, walkChain, recomputeHash, ChainWalker, PROOF_BATCH, type Proof } from './proof.js'
export { toEventDto, type AuditEventDto } from './dto.js'
