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
  last_error: string | null
  next_attempt_at: Date | null
}

/** Undelivered and due: never failed, or its retry delay has passed. */
const DUE = '(next_attempt_at IS NULL OR next_attempt_at <= now())'

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

/**
 * The tenant's first `limit` undelivered events in order, locked (outbox_events_pending). Rows
 * another claimer holds are skipped, or with `waitForHeld` waited for: PostgreSQL then reads each again
 * once its holder has finished and leaves it out if that holder delivered it. Events waiting out a
 * retry delay are left out unless `waiting`.
 */
export async function claimPending (tx: Tx, limit: number, tenantId: string, waiting = false, waitForHeld = false): Promise<OutboxRow[]> {
  const q = tx('outbox_events').where({ tenant_id: tenantId }).whereNull('delivered_at')
  if (!waiting) q.whereRaw(DUE)
  const locked = q.orderBy('position').limit(limit).forUpdate()
  return (waitForHeld ? locked : locked.skipLocked()).select('*')
}

/** Tenants with undelivered events that are due (all undelivered with `waiting`) (outbox_events_pending). */
export async function tenantsWithPending (db: Queryable, limit = 1000, waiting = false): Promise<string[]> {
  const r = await db.raw(`SELECT DISTINCT tenant_id FROM outbox_events WHERE delivered_at IS NULL${waiting ? '' : ` AND ${DUE}`} LIMIT ?`, [limit])
  return r.rows.map((x: { tenant_id: string }) => x.tenant_id)
}

/** Marks a claim of one tenant delivered in one statement. */
export async function markDelivered (tx: Tx, tenantId: string, rows: OutboxRow[]): Promise<void> {
  await tx.raw(`UPDATE outbox_events SET delivered_at = now(), attempts = attempts + 1, last_error = NULL
    WHERE tenant_id = ? AND id = ANY(?::uuid[])`, [tenantId, rows.map(r => r.id)])
}

/** Counts a failed attempt, keeps its error and holds the event back for `retryInSeconds`. */
export async function markFailed (tx: Tx, row: OutboxRow, error: string, retryInSeconds: number): Promise<void> {
  await tx.raw(`UPDATE outbox_events SET attempts = ?, last_error = ?, next_attempt_at = now() + make_interval(secs => ?)
    WHERE tenant_id = ? AND id = ?`, [row.attempts + 1, error.slice(0, 2000), retryInSeconds, row.tenant_id, row.id])
}

/** Undelivered events whose last delivery failed: waiting for their next attempt, or due again. */
export interface Backlog { pending: number, waiting: number, due: number, oldestSeconds: number }

/**
 * The undelivered events of every tenant (partial index outbox_events_pending): how many, how many
 * failed and wait for their next attempt or are due again, and the age of the oldest (0: none).
 */
export async function backlog (db: Queryable): Promise<Backlog> {
  const r = await db.raw(`SELECT count(*)::int AS pending,
      count(*) FILTER (WHERE attempts > 0 AND NOT ${DUE})::int AS waiting, count(*) FILTER (WHERE attempts > 0 AND ${DUE})::int AS due,
      coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS "oldestSeconds"
    FROM outbox_events WHERE delivered_at IS NULL`)
  return r.rows[0]
}

export async function countPending (db: Queryable, tenantId?: string): Promise<number> {
  const q = db('outbox_events').whereNull('delivered_at').count<{ count: number }[]>('* as count')
  if (tenantId !== undefined) q.where({ tenant_id: tenantId })
  const [{ count }] = await q
  return Number(count)
}

// Uses the partial index outbox_events_pending. Events waiting out a retry delay do not count:
// the poll queues no dispatch for them until they are due.
export async function hasPending (db: Queryable): Promise<boolean> {
  const r = await db.raw(`SELECT EXISTS (SELECT 1 FROM outbox_events WHERE delivered_at IS NULL AND ${DUE}) AS pending`)
  return r.rows[0].pending === true
}

export interface PruneBatch { pruned: number, read: number, last: string | null, reached: boolean }

/**
 * Retention, one batch of one tenant: reads the tenant's next `limit` events after `after` in
 * position order (index outbox_events_tenant) and deletes those delivered before `before`.
 * `reached` says the batch held an event created at or after `before`: later positions were
 * written about then or later, so the tenant is done for this run (an older one behind it, from a
 * long transaction, goes in a later run). Undelivered events are never deleted, however old.
 */
export async function pruneDelivered (db: Queryable, tenantId: string, after: string, before: Date, limit: number): Promise<PruneBatch> {
  const r = await db.raw(`
    WITH batch AS MATERIALIZED (
      SELECT id, position, created_at, delivered_at FROM outbox_events
      WHERE tenant_id = ? AND position > ?::bigint ORDER BY position LIMIT ?
    ), gone AS (
      DELETE FROM outbox_events e WHERE e.tenant_id = ? AND e.id IN (SELECT id FROM batch WHERE delivered_at < ?) RETURNING e.id
    )
    SELECT (SELECT count(*) FROM gone)::int AS pruned, (SELECT count(*) FROM batch)::int AS read,
      (SELECT max(position) FROM batch)::text AS last, coalesce((SELECT bool_or(created_at >= ?) FROM batch), false) AS reached`,
  [tenantId, after, limit, tenantId, before, before])
  return r.rows[0]
}
