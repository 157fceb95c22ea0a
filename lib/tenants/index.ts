import type { Queryable } from '../db.js'

// Tenants come into being on first use (CONTRACT "General"). The set only remembers tenants this
// process has already written; a miss costs one idempotent insert.
const known = new Set<string>()

export async function ensureTenant (db: Queryable, tenantId: string): Promise<void> {
  if (known.has(tenantId)) return
  await db.raw('INSERT INTO tenants (id) VALUES (?) ON CONFLICT (id) DO NOTHING', [tenantId])
  known.add(tenantId)
}
