import { runStatements, type Queryable, type Statement } from '../db.js'

export interface DomainEvent {
  type: string
  aggregateType: string
  aggregateId: string
  payload: unknown
}

/**
 * The statement that queues domain events (in order); run inside the write's transaction, so
 * the events exist exactly when the change does.
 */
export function emitStatement (tenantId: string, events: DomainEvent[]): Statement | null {
  if (events.length === 0) return null
  return {
    sql: `INSERT INTO outbox_events (tenant_id, type, aggregate_type, aggregate_id, payload)
      SELECT ?, e.v->>'type', e.v->>'aggregate_type', e.v->>'aggregate_id', e.v->'payload'
      FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS e(v, n)
      ORDER BY e.n`,
    name: 'outbox.emit',
    bindings: [tenantId, JSON.stringify(events.map(e => ({ type: e.type, aggregate_type: e.aggregateType, aggregate_id: e.aggregateId, payload: e.payload })))]
  }
}

export async function emitInTransaction (tx: Queryable, tenantId: string, events: DomainEvent[]): Promise<void> {
  const s = emitStatement(tenantId, events)
  if (s !== null) await runStatements(tx, [s])
  // No NOTIFY here: NOTIFY serialises every committing transaction of the database on one
  // queue lock. The worker polls the pending index instead (worker/main.ts).
}

export { claimAndDeliver, type OutboxConsumer, type DeliveryResult } from './deliver.js'

/** Whether any event awaits delivery (uses the partial index outbox_events_pending). */
export async function hasPending (db: Queryable): Promise<boolean> {
  const r = await db.raw('SELECT EXISTS (SELECT 1 FROM outbox_events WHERE delivered_at IS NULL) AS pending')
  return r.rows[0].pending === true
}
