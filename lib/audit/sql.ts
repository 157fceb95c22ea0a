import type { Bindings, Queryable, Statement, Tx } from '../db.js'

export interface AuditRow {
  id: string
  arrival: number
  tenant_id: string
  sequence: number | null
  type: string
  actor: { sub: string, roles: string[] } | null
  resource_type: string | null
  resource_id: string | null
  data: unknown
  occurred_at: Date
  previous_hash: string | null
  hash: string | null
}

export interface NewAuditEvent {
  type: string
  resourceType: string | null
  resourceId: string | null
  data: unknown
}

/**
 * Inserts unsequenced events in the given order (arrival follows it). occurred_at is truncated
 * to milliseconds: the hash covers its ISO form, which has millisecond precision.
 */
export function insertEventsStatement (tenantId: string, actor: object | null, events: NewAuditEvent[]): Statement {
  return {
    sql: insertEvents('jsonb_array_elements(?::jsonb) WITH ORDINALITY AS e(v, n)'),
    name: 'audit.insert-events',
    bindings: [tenantId, actor === null ? null : JSON.stringify(actor),
      JSON.stringify(events.map(e => ({ type: e.type, resourceType: e.resourceType, resourceId: e.resourceId, data: e.data ?? {} })))]
  }
}

/** The same insert from rows `e(v, n)` of another statement, v a NewAuditEvent as jsonb. */
export function insertEventsFromStatement (tenantId: string, actor: object | null, rows: string): Statement {
  return { sql: insertEvents(rows), bindings: [tenantId, actor === null ? null : JSON.stringify(actor)] }
}

function insertEvents (rows: string): string {
  return `INSERT INTO audit_events (tenant_id, type, actor, resource_type, resource_id, data, occurred_at)
    SELECT ?, e.v->>'type', ?::jsonb, e.v->>'resourceType', e.v->>'resourceId', coalesce(e.v->'data', '{}'),
      date_trunc('milliseconds', clock_timestamp())
    FROM ${rows}
    ORDER BY e.n`
}

/** Locks the tenant's chain head (creating it at genesis). Held until the transaction ends. */
export async function lockHead (tx: Tx, tenantId: string, genesis: string): Promise<{ sequence: number, hash: string }> {
  await tx.raw('INSERT INTO audit_heads (tenant_id, sequence, hash) VALUES (?, 0, ?) ON CONFLICT (tenant_id) DO NOTHING', [tenantId, genesis])
  const row = await tx('audit_heads').where({ tenant_id: tenantId }).forUpdate().first('sequence', 'hash')
  return { sequence: Number(row.sequence), hash: row.hash }
}

// Uses audit_events_pending (partial index on unsequenced rows).
export async function pendingEvents (tx: Tx, tenantId: string, limit: number): Promise<AuditRow[]> {
  return tx('audit_events').where({ tenant_id: tenantId }).whereNull('sequence').orderBy('arrival').limit(limit).select('*')
}

export async function assignSequences (tx: Tx, tenantId: string, rows: Array<{ id: string, sequence: number, previousHash: string, hash: string }>): Promise<void> {
  if (rows.length === 0) return
  await tx.raw(`
    UPDATE audit_events a SET sequence = v.sequence, previous_hash = v.previous_hash, hash = v.hash
    FROM jsonb_to_recordset(?::jsonb) AS v(id uuid, sequence bigint, previous_hash text, hash text)
    WHERE a.tenant_id = ? AND a.id = v.id`, [JSON.stringify(rows.map(r => ({ id: r.id, sequence: r.sequence, previous_hash: r.previousHash, hash: r.hash }))), tenantId])
}

export async function moveHead (tx: Tx, tenantId: string, sequence: number, hash: string): Promise<void> {
  await tx('audit_heads').where({ tenant_id: tenantId }).update({ sequence, hash, updated_at: tx.fn.now() })
}

export async function tenantsWithPending (db: Queryable, limit = 100): Promise<string[]> {
  const rows = await db.raw(`
    SELECT DISTINCT tenant_id FROM audit_events WHERE sequence IS NULL LIMIT ?`, [limit])
  return rows.rows.map((r: { tenant_id: string }) => r.tenant_id)
}

// ---- Read side (list and proof). Only sequenced rows are visible to readers. ----

/** What a reader sees of an event: every sequenced row has previous_hash and hash. */
export type SequencedRow = Omit<AuditRow, 'arrival' | 'tenant_id'> & { sequence: number }

const READ_COLS = 'id, sequence, type, actor, resource_type, resource_id, data, occurred_at, previous_hash, hash'

export interface EventFilter {
  type?: string
  resourceType?: string
  resourceId?: string
  /** occurred_at >= from */
  from?: string
  /** occurred_at < to */
  to?: string
}

function filterSql (tenantId: string, f: EventFilter): { where: string, params: Bindings } {
  const where = ['tenant_id = ?', 'sequence IS NOT NULL']
  const params: Bindings = [tenantId]
  if (f.type !== undefined) { where.push('type = ?'); params.push(f.type) }
  if (f.resourceType !== undefined) { where.push('resource_type = ?'); params.push(f.resourceType) }
  if (f.resourceId !== undefined) { where.push('resource_id = ?'); params.push(f.resourceId) }
  if (f.from !== undefined) { where.push('occurred_at >= ?::timestamptz'); params.push(f.from) }
  if (f.to !== undefined) { where.push('occurred_at < ?::timestamptz'); params.push(f.to) }
  return { where: where.join(' AND '), params }
}

/**
 * Newest first. Walks audit_events_tenant_sequence backwards; the type and resource filters have
 * their own (tenant, ..., sequence) indexes. from/to have no index: they filter the walk.
 */
export async function listEvents (db: Queryable, tenantId: string, f: EventFilter, limit: number, offset: number): Promise<{ rows: SequencedRow[], total: number }> {
  const { where, params } = filterSql(tenantId, f)
  const [rows, count] = await Promise.all([
    db.raw(`SELECT ${READ_COLS} FROM audit_events WHERE ${where} ORDER BY sequence DESC LIMIT ? OFFSET ?`, [...params, limit, offset]),
    db.raw(`SELECT count(*)::int AS n FROM audit_events WHERE ${where}`, params)
  ])
  return { rows: rows.rows, total: count.rows[0].n }
}

export async function findSequencedEvent (db: Queryable, tenantId: string, id: string): Promise<SequencedRow | null> {
  const r = await db.raw(`SELECT ${READ_COLS} FROM audit_events WHERE id = ? AND tenant_id = ? AND sequence IS NOT NULL`, [id, tenantId])
  return r.rows[0] ?? null
}

/** The chain head as the sequencer last left it; null when the tenant has no head row. */
export async function readHead (db: Queryable, tenantId: string): Promise<{ sequence: number, hash: string } | null> {
  const row = await db('audit_heads').where({ tenant_id: tenantId }).first('sequence', 'hash')
  return row === undefined ? null : { sequence: Number(row.sequence), hash: row.hash }
}

/** One batch of the chain in sequence order, after `afterSequence` (keyset on audit_events_tenant_sequence). */
export async function chainBatch (db: Queryable, tenantId: string, afterSequence: number, limit: number): Promise<SequencedRow[]> {
  const r = await db.raw(`SELECT ${READ_COLS} FROM audit_events
    WHERE tenant_id = ? AND sequence > ? ORDER BY sequence LIMIT ?`, [tenantId, afterSequence, limit])
  return r.rows
}
