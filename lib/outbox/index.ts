import type { Db, Statement } from '../db.js'
import type { Causation } from '../context.js'
import type { Logger } from '../log.js'
import * as settings from '../settings/index.js'
import * as sql from './sql.js'

// Domain events (docs/behaviour.md "Automation": object.*, relation.*), written in the same
// transaction as the change they describe and delivered by the worker (jobs/handlers/outbox-dispatch.ts).
// No NOTIFY inside the write: NOTIFY serialises every committing transaction of the database on
// one queue lock. The pipeline announces committed events afterwards (`announceCommitted`), and
// the worker also polls the pending index (worker/start.ts).

export type { DomainEvent, OutboxRow } from './sql.js'
export { claimAndDeliver, deliverPending, retryDelaySeconds, RETRY_MAX_SECONDS, type OutboxConsumer, type DeliveryResult, type DeliveryOptions } from './deliver.js'
export { hasPending, backlog, type Backlog } from './sql.js'
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

/** After a write with domain events committed: wakes every process listening (`onCommitted`). */
export function announceCommitted (db: Db, tenantId: string, log?: Logger): void {
  settings.announce(db, 'outbox', tenantId, log)
}

/**
 * Calls `listener` when a write of a tenant committed domain events, in this process or another
 * (tenant null: the feed reconnected and may have missed some). Returns the unsubscribe.
 */
export function onCommitted (db: Db, listener: (tenantId: string | null) => void): () => void {
  return settings.onChange(db, (kind, tenantId) => { if (kind === 'outbox') listener(tenantId) })
}
