import type { Knex } from 'knex'

// Lookups by id always carry the tenant (`id = ? AND tenant_id = ?`). With statistics that do not
// yet know a new or fast-growing tenant, the planner may judge the tenant "rare" and walk one of
// the tenant-leading indexes, filtering every row of the tenant by id. An index that matches
// both conditions exactly makes the single-row plan the cheapest whatever the statistics say.
export async function up (knex: Knex): Promise<void> {
  await knex.raw('CREATE UNIQUE INDEX objects_tenant_id ON objects (tenant_id, id)')
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS objects_tenant_id')
}
