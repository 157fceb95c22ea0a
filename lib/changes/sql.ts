import type { Queryable } from '../db.js'
import * as objects from '../objects/index.js'
import * as queries from '../queries/index.js'
import { cursorPrefix } from './cursor.js'

const { sql, trusted } = queries
type Fragment = queries.Fragment

/** One change as the feed shows it: its sequence, its cursor and its JSON text (built by PostgreSQL). */
export interface ChangeRow { sequence: number, cursor: string, change: string }

/** A read: the chain head in the same snapshot, whether events await sequencing, and the changes. */
export interface ChangeRows { head: number, pending: boolean, rows: ChangeRow[] }

export interface Selection {
  /** The WHERE fragment over an object source `o` (lib/layers selection), or null: every object. */
  where: Fragment | null
  /** false: tombstone-like changes only (`include=id`). */
  withObject: boolean
}

/** Audit event type -> change kind: the object events of the chain (lib/objects changeRecord). */
export const EVENT_KINDS = {
  'object.created': 'created',
  'object.updated': 'updated',
  'workflow.transitioned': 'transitioned',
  'object.deleted': 'deleted'
} as const

const TYPES = trusted(Object.keys(EVENT_KINDS).map(t => `'${t}'`).join(', '))
const BASE_KIND = trusted(`CASE e.type ${Object.entries(EVENT_KINDS).map(([t, k]) => `WHEN '${t}' THEN '${k}'`).join(' ')} END`)
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`

/** The version of the event's object the change made, or (`back` 1) the one before it, as source `o`. */
function version (tenantId: string, back: number): Fragment {
  return sql`(SELECT ${trusted(objects.VERSION_COLS)} FROM object_versions
    WHERE tenant_id = ${tenantId} AND object_id = e.resource_id::uuid AND version = (e.data->>'version')::int - ${back})`
}

/**
 * Filtered, a change is about the selection's membership: whether the version it made matches
 * (`now_in`) and whether the one before did (`was_in`). Moved in: entered; moved out: left;
 * neither: not shown. A delete matters when the last live version matched; a create when its first does.
 */
function kind (tenantId: string, where: Fragment | null): { lateral: Fragment, kind: Fragment } {
  if (where === null) return { lateral: trusted(''), kind: BASE_KIND }
  const lateral = sql`CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM ${version(tenantId, 0)} o WHERE ${where}) AS now_in,
    EXISTS (SELECT 1 FROM ${version(tenantId, 1)} o WHERE ${where}) AS was_in) m`
  return {
    lateral,
    kind: sql`CASE WHEN e.type = 'object.deleted' THEN CASE WHEN m.was_in THEN 'deleted' END
      WHEN e.type = 'object.created' THEN CASE WHEN m.now_in THEN 'created' END
      WHEN m.now_in AND m.was_in THEN ${BASE_KIND} WHEN m.now_in THEN 'entered' WHEN m.was_in THEN 'left' END`
  }
}

/** The change's JSON: the object (as GET /v1/objects/{id} answers it) only when asked for and not a tombstone. */
function changeJson (withObject: boolean): Fragment {
  const head = `'cursor', c.cursor, 'kind', k.kind, 'objectId', v.id, 'typeId', v.type_id, 'version', v.version,
    'at', to_char(e.occurred_at AT TIME ZONE 'UTC', ${ISO})`
  if (!withObject) return trusted(`json_build_object(${head})`)
  return trusted(`CASE WHEN k.kind IN ('deleted', 'left') THEN json_build_object(${head})
    ELSE json_build_object(${head}, 'object', ${objects.objectJson('v')}) END`)
}

/**
 * The changes after sequence `after`, in sequence order: at most `limit` of them, among the
 * events up to `after + scan` and the head. One statement, so the head is read in the snapshot
 * of the events: no event at or below it can become visible later (sequences are assigned under
 * the head lock, in the transaction that moves the head). Every table is filtered by the same
 * tenant value (one shard on Citus). Walks audit_events_tenant_sequence; each version is a
 * primary-key probe of object_versions.
 */
export async function readChanges (db: Queryable, tenantId: string, s: Selection, after: number, limit: number, scan: number): Promise<ChangeRows> {
  const k = kind(tenantId, s.where)
  const statement = sql`WITH h AS (
      SELECT coalesce((SELECT sequence FROM audit_heads WHERE tenant_id = ${tenantId}), 0) AS head,
        EXISTS (SELECT 1 FROM audit_events WHERE tenant_id = ${tenantId} AND sequence IS NULL) AS pending)
    SELECT h.head, h.pending, r.sequence, r.cursor, r.change FROM h LEFT JOIN LATERAL (
      SELECT e.sequence, c.cursor, ${changeJson(s.withObject)}::text AS change
      FROM audit_events e
      CROSS JOIN LATERAL ${version(tenantId, 0)} v
      ${k.lateral}
      CROSS JOIN LATERAL (SELECT ${k.kind} AS kind) k
      CROSS JOIN LATERAL (SELECT rtrim(translate(encode(convert_to(${cursorPrefix(tenantId)}::text || e.sequence, 'UTF8'), 'base64'), '+/', '-_'), '=') AS cursor) c
      WHERE e.tenant_id = ${tenantId} AND e.sequence > ${after} AND e.sequence <= least(h.head, ${after + scan}::bigint)
        AND e.resource_type = 'object' AND e.type IN (${TYPES}) AND k.kind IS NOT NULL
      ORDER BY e.sequence LIMIT ${limit}
    ) r ON true ORDER BY r.sequence`
  const result = await db.raw(statement.text, statement.params)
  const rows = result.rows as Array<{ head: string, pending: boolean, sequence: string | null, cursor: string, change: string }>
  return {
    head: Number(rows[0].head),
    pending: rows[0].pending,
    rows: rows.filter(r => r.sequence !== null).map(r => ({ sequence: Number(r.sequence), cursor: r.cursor, change: r.change }))
  }
}
