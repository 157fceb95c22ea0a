import type { Knex } from 'knex'

// The row lock an object create takes on its types (lib/objects insertObjectsStatement), as a
// function: the statement reads `SELECT * FROM object_types_lock_live(tenant, ids)` instead of a
// `SELECT ... FOR KEY SHARE` CTE. Same lock, same recheck (a type soft-deleted by a transaction
// that committed while this one waited is not returned, so no object of it is written). Why a
// function: on a tenant-sharded cluster (Citus 13) a locking SELECT in a CTE of a statement that
// also inserts into distributed tables becomes a subplan whose intermediate result is written in
// binary and read as text ("invalid input syntax for type uuid: PGCOPY"); the function's rows
// come back as a plain function scan, and its inner SELECT is a one-shard router query.
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION object_types_lock_live (p_tenant text, p_ids uuid[])
    RETURNS TABLE (id uuid, published_version integer) LANGUAGE sql VOLATILE AS $fn$
      SELECT t.id, t.published_version FROM object_types t
      WHERE t.tenant_id = p_tenant AND t.id = ANY (p_ids) AND t.deleted_at IS NULL
      FOR KEY SHARE
    $fn$;
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS object_types_lock_live (text, uuid[])')
}
