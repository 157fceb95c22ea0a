import type { Queryable, Tx } from '../db.js'
import type { RoleGrants } from '../access/index.js'

export interface PolicyRow { roles: Record<string, RoleGrants>, version: number, updated_at: Date | null }

export const EMPTY: PolicyRow = Object.freeze({ roles: {}, version: 0, updated_at: null })

export async function findPolicy (db: Queryable, tenantId: string): Promise<PolicyRow> {
  const r = await db.raw('SELECT roles, version, updated_at FROM permission_policies WHERE tenant_id = ?', [tenantId])
  return r.rows[0] ?? EMPTY
}

/** The tenant's policy row, locked until COMMIT (created at version 0 on first use). */
export async function lockPolicy (tx: Tx, tenantId: string): Promise<PolicyRow> {
  await tx.raw(`INSERT INTO permission_policies (tenant_id, roles, version) VALUES (?, '{}', 0) ON CONFLICT (tenant_id) DO NOTHING`, [tenantId])
  const r = await tx.raw('SELECT roles, version, updated_at FROM permission_policies WHERE tenant_id = ? FOR UPDATE', [tenantId])
  return r.rows[0]
}

export async function savePolicy (tx: Tx, tenantId: string, roles: Record<string, RoleGrants>, version: number, by: string): Promise<PolicyRow> {
  const r = await tx.raw(`UPDATE permission_policies SET roles = ?::jsonb, version = ?, updated_at = now(), updated_by = ?
    WHERE tenant_id = ? RETURNING roles, version, updated_at`, [JSON.stringify(roles), version, by, tenantId])
  return r.rows[0]
}
