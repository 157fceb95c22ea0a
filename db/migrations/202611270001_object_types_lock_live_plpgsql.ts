import type { Knex } from 'knex'

// object_types_lock_live (migration 202611240201) in PL/pgSQL: the same rows, the same lock (FOR
// KEY SHARE) and the same recheck of deleted_at after a wait. A LANGUAGE sql function that cannot
// be inlined (it returns a set and locks) has its body parsed and planned again on every call,
// once per object create; PL/pgSQL keeps the plan of its query for the session, which brings a
// create close to one without the lock (docs/performance.md). The lock stays: without it an
// object could be written under a type soft-deleted meanwhile.
const PLPGSQL = `
  CREATE OR REPLACE FUNCTION object_types_lock_live (p_tenant text, p_ids uuid[])
  RETURNS TABLE (id uuid, published_version integer) LANGUAGE plpgsql VOLATILE AS $fn$
  BEGIN
    RETURN QUERY SELECT t.id, t.published_version FROM object_types t
      WHERE t.tenant_id = p_tenant AND t.id = ANY (p_ids) AND t.deleted_at IS NULL
      FOR KEY SHARE;
  END
  $fn$`

const SQL = `
  CREATE OR REPLACE FUNCTION object_types_lock_live (p_tenant text, p_ids uuid[])
  RETURNS TABLE (id uuid, published_version integer) LANGUAGE sql VOLATILE AS $fn$
    SELECT t.id, t.published_version FROM object_types t
    WHERE t.tenant_id = p_tenant AND t.id = ANY (p_ids) AND t.deleted_at IS NULL
    FOR KEY SHARE
  $fn$`

export async function up (knex: Knex): Promise<void> {
  await knex.raw(PLPGSQL)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(SQL)
}
