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
  // Wakes a listening worker on commit (NOTIFY is transactional); polling is the backstop.
  await tx.raw("SELECT pg_notify('outbox_events', ?)", [tenantId])
}

export { claimAndDeliver, type OutboxConsumer, type DeliveryResult } from './deliver.js'
