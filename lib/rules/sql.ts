import type { Bindings, Queryable, Tx } from '../db.js'
import type { RuleContent, RuleKind } from './definition.js'
import * as versioning from '../versioning/index.js'

export type RuleStatus = versioning.VersionStatus

export interface RuleRow {
  id: string
  tenant_id: string
  key: string
  kind: RuleKind
  latest_version: number
  published_version: number | null
  created_at: Date
  updated_at: Date
}

export type RuleVersionRow = versioning.VersionRow<RuleContent>

/** The rule's versions (lib/versioning): draft -> sandbox -> published. */
export const versions = versioning.versionStore<RuleContent>({ parents: 'rules', versions: 'rule_versions', parentKey: 'rule_id' })

export type RuleWithLatest = RuleRow & { latest_status: RuleStatus, latest_content: RuleContent }


const LATEST = `
  SELECT r.*, v.status AS latest_status, v.definition AS latest_content
  FROM rules r JOIN rule_versions v ON v.tenant_id = r.tenant_id AND v.rule_id = r.id AND v.version = r.latest_version`

/** One rule with its latest version; `lock` serialises writers of the rule (FOR UPDATE). */
export async function findRule (db: Queryable, tenantId: string, id: string, lock = false): Promise<RuleWithLatest | null> {
  const r = await db.raw(`${LATEST} WHERE r.id = ? AND r.tenant_id = ?${lock ? ' FOR UPDATE OF r' : ''}`, [id, tenantId])
  return r.rows[0] ?? null
}

export interface RuleFilter { limit: number, offset: number, kind?: string, status?: string, key?: string }

/** Relies on rules_tenant_created for the default order. */
export async function listRules (db: Queryable, tenantId: string, f: RuleFilter): Promise<{ rows: RuleWithLatest[], total: number }> {
  const where = ['r.tenant_id = ?']
  const params: Bindings = [tenantId]
  if (f.kind !== undefined) { where.push('r.kind = ?'); params.push(f.kind) }
  if (f.status !== undefined) { where.push('v.status = ?'); params.push(f.status) }
  if (f.key !== undefined) { where.push('r.key = ?'); params.push(f.key) }
  const cond = where.join(' AND ')
  const [rows, count] = await Promise.all([
    db.raw(`${LATEST} WHERE ${cond} ORDER BY r.created_at, r.id LIMIT ? OFFSET ?`, [...params, f.limit, f.offset]),
    db.raw(`SELECT count(*)::int AS n FROM rules r JOIN rule_versions v ON v.tenant_id = r.tenant_id AND v.rule_id = r.id AND v.version = r.latest_version WHERE ${cond}`, params)
  ])
  return { rows: rows.rows, total: count.rows[0].n }
}

export async function insertRule (tx: Tx, tenantId: string, key: string, kind: RuleKind): Promise<RuleRow> {
  const [row] = await tx('rules').insert({ tenant_id: tenantId, key, kind }).returning('*')
  return row
}

/** The ids among `ids` that are rules of the tenant (for reference checks when a workflow is saved). */
export async function existingRuleIds (db: Queryable, tenantId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return []
  const r = await db.raw('SELECT id FROM rules WHERE tenant_id = ? AND id = ANY(?::uuid[])', [tenantId, ids])
  return r.rows.map((x: { id: string }) => x.id)
}

export interface GuardRuleRow {
  id: string
  key: string
  kind: RuleKind
  latest_version: number
  latest_status: RuleStatus
  published_version: number | null
  published_content: RuleContent | null
}

/** The rules a set of guards names, each with its published content (null when never published). */
export async function findGuardRules (db: Queryable, tenantId: string, ids: string[]): Promise<GuardRuleRow[]> {
  if (ids.length === 0) return []
  const r = await db.raw(`
    SELECT r.id, r.key, r.kind, r.latest_version, lv.status AS latest_status, r.published_version,
      pv.definition AS published_content
    FROM rules r
    JOIN rule_versions lv ON lv.tenant_id = r.tenant_id AND lv.rule_id = r.id AND lv.version = r.latest_version
    LEFT JOIN rule_versions pv ON pv.tenant_id = r.tenant_id AND pv.rule_id = r.id AND pv.version = r.published_version
    WHERE r.tenant_id = ? AND r.id = ANY(?::uuid[])`, [tenantId, ids])
  return r.rows
}
