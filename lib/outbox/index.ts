import type { Statement } from '../db.js'
import type { Causation } from '../context.js'
import * as sql from './sql.js'

// Domain events (CONTRACT "Automation": object.*, relation.*), written in the same transaction as
// the change they describe and delivered by the worker (jobs/handlers/outbox-dispatch.ts).
// No NOTIFY on write: NOTIFY serialises every committing transaction of the database on one
// queue lock. The worker polls the pending index instead (worker/main.ts).

export type { DomainEvent, OutboxRow } from './sql.js'
export { claimAndDeliver, deliverPending, retryDelaySeconds, RETRY_MAX_SECONDS, type OutboxConsumer, type DeliveryResult, type DeliveryOptions } from './deliver.js'
export { hasPending, countRetrying } from './sql.js'
export { pruneDelivered } from './retention.js'

/**
 * The statement that queues domain events; the write pipeline runs it in the write's transaction.
 * Events caused by an automation run carry `payload.causation` ({depth, ruleId, runId}), which
 * the automation engine reads to stop rules that trigger themselves.
 */
export function emitStatement (tenantId: string, events: sql.DomainEvent[], causation?: Causation): Statement | null {
  return events.length === 0 ? null : sql.emitStatement(tenantId, events, causation ?? null)
}

/** The same events read from rows `e(v, n)` of the statement they are folded into (lib/pipeline). */
export function emitFromStatement (tenantId: string, rows: string, causation?: Causation): Statement {
  return sql.emitFromStatement(tenantId, rows, causation ?? null)
}
