import type { Queryable } from '../db.js'

export interface DomainEvent {
  type: string
  aggregateType: string
  aggregateId: string
  payload: unknown
}

/** Queues domain events in the caller's transaction: they exist exactly when the change does. */
export async function emitInTransaction (tx: Queryable, tenantId: string, events: DomainEvent[]): Promise<void> {
  if (events.length === 0) return
  await tx('outbox_events').insert(events.map(e => ({
    tenant_id: tenantId,
    type: e.type,
    aggregate_type: e.aggregateType,
    aggregate_id: e.aggregateId,
    payload: JSON.stringify(e.payload)
  })))
  // No NOTIFY here: NOTIFY serialises every committing transaction of the database on one
  // queue lock. The worker polls the pending index instead (worker/main.ts).
}

export { claimAndDeliver, type OutboxConsumer, type DeliveryResult } from './deliver.js'

/** Whether any event awaits delivery (uses the partial index outbox_events_pending). */
export async function hasPending (db: Queryable): Promise<boolean> {
  const r = await db.raw('SELECT EXISTS (SELECT 1 FROM outbox_events WHERE delivered_at IS NULL) AS pending')
  return r.rows[0].pending === true
}
