import type { Queryable } from '../db.js'

/** The tenant's row, inserted when missing (idempotent). */
export async function insertTenant (db: Queryable, tenantId: string): Promise<void> {
  await db.raw('INSERT INTO tenants (id) VALUES (?) ON CONFLICT (id) DO NOTHING', [tenantId])
}
