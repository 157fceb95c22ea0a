import type { Queryable } from '../db.js'

/** The tenant's row, inserted when missing (idempotent). */
export async function insertTenant (db: Queryable, tenantId: string): Promise<void> {
  await db.raw('INSERT INTO tenants (id) VALUES (?) ON CONFLICT (id) DO NOTHING', [tenantId])
}

/** Every tenant id, in order (a write creates its tenant's row first). */
export async function tenantIds (db: Queryable): Promise<string[]> {
  const r = await db.raw('SELECT id FROM tenants ORDER BY id')
  return r.rows.map((x: { id: string }) => x.id)
}
