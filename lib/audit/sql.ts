import { prepared, type Bindings, type Queryable, type Statement, type Tx } from '../db.js'
import type { StoredNode } from './merkle.js'

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

/** bytea[] as Buffers (pg gives Buffers; embedded PGlite gives Uint8Arrays, whose toString is not hex). */
function bytes (a: Uint8Array[] | null): Buffer[] {
  return (a ?? []).map(b => Buffer.from(b))
}

export interface LockedHead { sequence: number, hash: string, frontier: Buffer[], treeSize: number }

// Tenants whose chain head this process has seen: their head is locked in one round trip, not two
// (the genesis insert is skipped). A head that is gone (a test's TRUNCATE) is created again.
const knownHeads = new Set<string>()

/**
 * Locks the tenant's chain head (creating it at genesis). Held until the transaction ends. The
 * frontier comes from the locked row version itself, so it is the one the last holder committed.
 */
export async function lockHead (tx: Tx, tenantId: string, genesis: string): Promise<LockedHead>
/** With `skipLocked`: null at once when another transaction holds the head (nothing waits). */
export async function lockHead (tx: Tx, tenantId: string, genesis: string, skipLocked: boolean): Promise<LockedHead | null>
export async function lockHead (tx: Tx, tenantId: string, genesis: string, skipLocked = false): Promise<LockedHead | null> {
  const known = knownHeads.has(tenantId)
  if (!known) {
    await prepared(tx, 'audit.head-create', 'INSERT INTO audit_heads (tenant_id, sequence, hash) VALUES (?, 0, ?) ON CONFLICT (tenant_id) DO NOTHING', [tenantId, genesis])
  }
  const r = await prepared(tx, skipLocked ? 'audit.head-lock-skip' : 'audit.head-lock',
    `SELECT sequence, hash, tree_frontier, tree_size FROM audit_heads WHERE tenant_id = ? FOR UPDATE${skipLocked ? ' SKIP LOCKED' : ''}`, [tenantId])
  const row = r.rows[0]
  if (row === undefined) {
    // Skipped while another transaction holds it (a plain read tells, and never waits): null, and
    // the head is known, so the next try does not insert it again (an INSERT meeting a head that
    // another sequencer's open transaction updated waits for that transaction: the very wait
    // skipLocked is for).
    if (skipLocked && await headExists(tx, tenantId)) { knownHeads.add(tenantId); return null }
    // Gone though this process saw it: ask again once, creating it at genesis.
    if (!known) return null
    knownHeads.delete(tenantId)
    return lockHead(tx, tenantId, genesis, skipLocked)
  }
  if (knownHeads.size >= 100_000) knownHeads.clear()
  knownHeads.add(tenantId)
  return { sequence: Number(row.sequence), hash: row.hash, frontier: bytes(row.tree_frontier), treeSize: Number(row.tree_size) }
}

async function headExists (tx: Tx, tenantId: string): Promise<boolean> {
  return (await prepared(tx, 'audit.head-exists', 'SELECT 1 FROM audit_heads WHERE tenant_id = ?', [tenantId])).rows.length > 0
}

// Uses audit_events_pending (partial index on unsequenced rows).
export async function pendingEvents (tx: Tx, tenantId: string, limit: number): Promise<AuditRow[]> {
  return (await prepared(tx, 'audit.pending', 'SELECT * FROM audit_events WHERE tenant_id = ? AND sequence IS NULL ORDER BY arrival LIMIT ?', [tenantId, limit])).rows
}

export interface Appended {
  events: Array<{ id: string, sequence: number, previousHash: string, hash: string }>
  /** Complete subtrees (level >= 1) closed by these events. */
  nodes: StoredNode[]
  head: { sequence: number, hash: string, frontier: Buffer[] }
}

/**
 * One statement for a sequenced batch: the events' sequences and hashes, the tree nodes they
 * closed (the primary key refuses a second writer of a node, like the sequence index refuses a
 * fork) and the moved head with its new frontier.
 */
export async function appendToChain (tx: Tx, tenantId: string, a: Appended): Promise<void> {
  const hex = (b: Buffer) => b.toString('hex')
  await prepared(tx, 'audit.append', `
    WITH nodes AS (
      INSERT INTO audit_tree_nodes (tenant_id, level, idx, hash)
      SELECT ?, level, idx, decode(hash, 'hex') FROM unnest(?::smallint[], ?::bigint[], ?::text[]) AS n(level, idx, hash)
    ), head AS (
      UPDATE audit_heads SET sequence = ?, tree_size = ?, hash = ?, updated_at = now(),
        tree_frontier = ARRAY(SELECT decode(f.h, 'hex') FROM unnest(?::text[]) WITH ORDINALITY AS f(h, o) ORDER BY f.o)
      WHERE tenant_id = ?
    )
    UPDATE audit_events a SET sequence = v.sequence, previous_hash = v.previous_hash, hash = v.hash
    FROM jsonb_to_recordset(?::jsonb) AS v(id uuid, sequence bigint, previous_hash text, hash text)
    WHERE a.tenant_id = ? AND a.id = v.id`, [
    tenantId, a.nodes.map(n => n.level), a.nodes.map(n => n.idx), a.nodes.map(n => hex(n.hash)),
    a.head.sequence, a.head.sequence, a.head.hash, a.head.frontier.map(hex), tenantId,
    JSON.stringify(a.events.map(r => ({ id: r.id, sequence: r.sequence, previous_hash: r.previousHash, hash: r.hash }))), tenantId
  ])
}

export async function tenantsWithPending (db: Queryable, limit = 100): Promise<string[]> {
  const rows = await prepared(db, 'audit.pending-tenants', 'SELECT DISTINCT tenant_id FROM audit_events WHERE sequence IS NULL LIMIT ?', [limit])
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

// ---- The Merkle tree (lib/audit/tree.ts) ----

/** The tree's size and frontier, unlocked (readers). */
export async function readTreeHead (db: Queryable, tenantId: string): Promise<{ size: number, frontier: Buffer[] } | null> {
  const row = await db('audit_heads').where({ tenant_id: tenantId }).first('tree_size', 'tree_frontier')
  return row === undefined ? null : { size: Number(row.tree_size), frontier: bytes(row.tree_frontier) }
}

/**
 * The stored nodes one proof needs, computed in SQL from the leaf index and the tree sizes, so the
 * lookup that gives those (the event, or the head) and the node probes are one statement: the keys
 * of merkle.ts inclusionNodeKeys / consistencyNodeKeys (the unit tests check them against the
 * proof's ranges). Siblings of leaf m's ancestors, at the levels l where 2^l >= `from`, wherever
 * the sibling is a complete subtree of D[n]; then the frontiers of n and f (one complete subtree
 * per set bit). Each key is one index probe: level >= 1 on audit_tree_nodes_pkey, a leaf (level 0)
 * hashed from its event by audit_events_tenant_sequence. A leaf whose row is gone hashes an empty
 * input, as audit_tree_rebuild does (its chain is damaged, which /proof reports; the tree covers
 * the chain as stored). The arguments are bigint SQL expressions of the enclosing row; the fragment
 * takes the tenant twice.
 */
const proofNodesSql = (m: string, n: string, f: string, from: string) => `
  SELECT k.level, k.idx, nd.hash FROM (
    SELECT l AS level, (${m} >> l) # 1 AS idx FROM generate_series(0, 62) l
      WHERE ${m} >= 0 AND (1::bigint << l) <= ${n} AND (1::bigint << l) >= ${from}
        AND ((((${m} >> l) # 1) + 1) << l) <= ${n}
    UNION
    SELECT l, (s >> l) - 1 FROM unnest(ARRAY[${n}, ${f}]) s, generate_series(0, 62) l WHERE ((s >> l) & 1) = 1
  ) k JOIN LATERAL (
    SELECT t.hash FROM audit_tree_nodes t WHERE k.level > 0 AND t.tenant_id = ? AND t.level = k.level AND t.idx = k.idx
    UNION ALL
    SELECT sha256('\\x00'::bytea || coalesce((SELECT decode(e.hash, 'hex') FROM audit_events e WHERE e.tenant_id = ? AND e.sequence = k.idx + 1), ''))
    WHERE k.level = 0
  ) nd ON true`

interface ProofRow { tree_size: string, level: number | null, idx: string | null, hash: Buffer | null }

const nodesOf = (rows: ProofRow[]): StoredNode[] => rows.filter(r => r.level !== null && r.hash !== null)
  .map(r => ({ level: Number(r.level), idx: Number(r.idx), hash: Buffer.from(r.hash!) }))

export interface LeafProofNodes { sequence: number, hash: string, treeSize: number, nodes: StoredNode[] }

/**
 * An event's place in the tree, the tree's current size (which may lag it) and, when `treeSize`
 * (default: the current size) lies in sequence..current size, every stored node of its inclusion
 * proof and of the root: one statement. Null when the tenant has no such sequenced event.
 */
export async function inclusionProofNodes (db: Queryable, tenantId: string, id: string, treeSize: number | undefined): Promise<LeafProofNodes | null> {
  const r = await db.raw(`
    SELECT leaf.sequence, leaf.hash, leaf.tree_size, p.level, p.idx, p.hash AS node
    FROM (SELECT e.sequence, e.hash, h.tree_size, coalesce(?::bigint, h.tree_size) AS n
          FROM audit_events e JOIN audit_heads h ON h.tenant_id = e.tenant_id
          WHERE e.tenant_id = ? AND h.tenant_id = ? AND e.id = ? AND e.sequence IS NOT NULL) leaf
    LEFT JOIN LATERAL (${proofNodesSql('(leaf.sequence - 1)', 'leaf.n', 'leaf.n', '1')}) p
      ON leaf.sequence <= leaf.n AND leaf.n <= leaf.tree_size`,
  [treeSize ?? null, tenantId, tenantId, id, tenantId, tenantId])
  const rows = r.rows as Array<{ sequence: string, hash: string, tree_size: string, level: number | null, idx: string | null, node: Buffer | null }>
  if (rows.length === 0) return null
  const { sequence, hash, tree_size: size } = rows[0]
  return { sequence: Number(sequence), hash, treeSize: Number(size), nodes: nodesOf(rows.map(x => ({ ...x, hash: x.node }))) }
}

/**
 * The tree's current size and, when first <= second (default: the current size) <= that size,
 * every stored node of PROOF(first, D[second]) and of both roots: one statement. Size 0 when the
 * tenant has no head yet.
 */
export async function consistencyProofNodes (db: Queryable, tenantId: string, first: number, second: number | undefined): Promise<{ treeSize: number, nodes: StoredNode[] }> {
  const r = await db.raw(`
    SELECT h.tree_size, p.level, p.idx, p.hash
    FROM (SELECT tree_size, coalesce(?::bigint, tree_size) AS n, ?::bigint AS f FROM audit_heads WHERE tenant_id = ?) h
    LEFT JOIN LATERAL (${proofNodesSql('(CASE WHEN h.f < h.n THEN h.f - 1 ELSE -1 END)', 'h.n', 'h.f', '(h.f & -h.f)')}) p ON h.f <= h.n AND h.n <= h.tree_size`,
  [second ?? null, first, tenantId, tenantId, tenantId])
  const rows = r.rows as ProofRow[]
  return { treeSize: rows.length === 0 ? 0 : Number(rows[0].tree_size), nodes: nodesOf(rows) }
}

/** Rebuilds a tenant's tree from its sequenced events (the migration's set-based SQL function). */
export async function rebuildTree (db: Queryable, tenantId: string): Promise<number> {
  const r = await db.raw('SELECT audit_tree_rebuild(?) AS n', [tenantId])
  return Number(r.rows[0].n)
}
