import type { Queryable, Statement, Tx } from '../db.js'

export interface DomainEvent {
  type: string
  aggregateType: string
  aggregateId: string
  payload: unknown
}

export interface OutboxRow {
  id: string
  position: number
  tenant_id: string
  type: string
  aggregate_type: string
  aggregate_id: string
  payload: unknown
  created_at: Date
  attempts: number
}

/**
 * Queues events in the given order (position follows it). `causation` (null for none) is added
 * to every payload as `payload.causation`.
 */
export function emitStatement (tenantId: string, events: DomainEvent[], causation: object | null): Statement {
  return {
    sql: insertEvents('jsonb_array_elements(?::jsonb) WITH ORDINALITY AS e(v, n)'),
    name: 'outbox.emit',
    bindings: [tenantId, causation === null ? null : JSON.stringify(causation), JSON.stringify(events)]
  }
}

/** The same insert from rows `e(v, n)` of another statement, v a DomainEvent as jsonb. */
export function emitFromStatement (tenantId: string, rows: string, causation: object | null): Statement {
  return { sql: insertEvents(rows), bindings: [tenantId, causation === null ? null : JSON.stringify(causation)] }
}

function insertEvents (rows: string): string {
  return `INSERT INTO outbox_events (tenant_id, type, aggregate_type, aggregate_id, payload)
    SELECT ?, e.v->>'type', e.v->>'aggregateType', e.v->>'aggregateId',
      e.v->'payload' || jsonb_strip_nulls(jsonb_build_object('causation', ?::jsonb))
    FROM ${rows}
    ORDER BY e.n`
}

/** The tenant's first `limit` undelivered events in order, locked; rows another claimer holds are skipped (outbox_events_pending). */
export async function claimPending (tx: Tx, limit: number, tenantId: string): Promise<OutboxRow[]> {
  return tx('outbox_events').where({ tenant_id: tenantId }).whereNull('delivered_at').orderBy('position').limit(limit).forUpdate().skipLocked().select('*')
}

/** Tenants with undelivered events (outbox_events_pending). */
export async function tenantsWithPending (db: Queryable, limit = 1000): Promise<string[]> {
  const r = await db.raw('SELECT DISTINCT tenant_id FROM outbox_events WHERE delivered_at IS NULL LIMIT ?', [limit])
  return r.rows.map((x: { tenant_id: string }) => x.tenant_id)
}

/** Marks a claim of one tenant delivered in one statement. */
export async function markDelivered (tx: Tx, tenantId: string, rows: OutboxRow[]): Promise<void> {
  await tx.raw(`UPDATE outbox_events SET delivered_at = now(), attempts = attempts + 1, last_error = NULL
    WHERE tenant_id = ? AND id = ANY(?::uuid[])`, [tenantId, rows.map(r => r.id)])
}

export async function markFailed (tx: Tx, row: OutboxRow, error: string): Promise<void> {
  await tx('outbox_events').where({ tenant_id: row.tenant_id, id: row.id }).update({ attempts: row.attempts + 1, last_error: error.slice(0, 2000) })
}

export async function countPending (db: Queryable, tenantId?: string): Promise<number> {
  const q = db('outbox_events').whereNull('delivered_at').count<{ count: number }[]>('* as count')
  if (tenantId !== undefined) q.where({ tenant_id: tenantId })
  const [{ count }] = await q
  return Number(count)
}

// Uses the partial index outbox_events_pending.
export async function hasPending (db: Queryable): Promise<boolean> {
  const r = await db.raw('SELECT EXISTS (SELECT 1 FROM outbox_events WHERE delivered_at IS NULL) AS pending')
  return r.rows[0].pending === true
}
