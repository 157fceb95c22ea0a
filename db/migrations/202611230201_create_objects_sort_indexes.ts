import type { Knex } from 'knex'

// Every documented sort of GET /v1/objects (docs/behaviour.md "Objects": id, publicId, typeId,
// workflowState, createdAt, updatedAt) reads its page from an index in both directions instead of
// sorting the tenant's whole set. A btree scans backwards for the reverse order, so one index per
// key serves asc and desc; the exception is the nullable workflow_state, whose nulls come last in
// both directions (a backward scan would put them first), so it has one index per direction.
// createdAt: objects_tenant_created; id: objects_tenant_id; publicId: objects_tenant_public_id
// (unique per tenant, so it needs no tie-breaker).
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE INDEX objects_tenant_updated ON objects (tenant_id, updated_at, id) WHERE deleted_at IS NULL;
    CREATE INDEX objects_tenant_type_id ON objects (tenant_id, type_id, id) WHERE deleted_at IS NULL;
    CREATE INDEX objects_tenant_state_asc ON objects (tenant_id, workflow_state ASC NULLS LAST, id ASC) WHERE deleted_at IS NULL;
    CREATE INDEX objects_tenant_state_desc ON objects (tenant_id, workflow_state DESC NULLS LAST, id DESC) WHERE deleted_at IS NULL;
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS objects_tenant_updated, objects_tenant_type_id, objects_tenant_state_asc, objects_tenant_state_desc')
}
