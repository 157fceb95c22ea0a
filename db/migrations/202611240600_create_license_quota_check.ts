import type { Knex } from 'knex'

// The license quota's shared path (lib/license quota.ts) as one function, so that a write that is
// one statement carries it (lib/pipeline StatementCheck) instead of a transaction around it. It
// takes the (tenant, counter) lock in SHARED mode, then reads the committed total in a snapshot
// taken after the lock (a VOLATILE function's statements each take a fresh one under READ
// COMMITTED), adds the write's own units and as many as every other possible holder of the lock
// may add (each an uncommitted write adding at most 1). Within that slack of the limit it raises
// PW001: the write then runs as a transaction, whose exact path takes the lock exclusively.
// The caller evaluates it before inserting its own deltas, so the total holds none of them.
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION license_quota_shared(p_tenant text, p_counter text, p_limit bigint, p_own bigint)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
    DECLARE
      total bigint;
      holders int := current_setting('max_connections')::int + current_setting('max_prepared_transactions')::int;
    BEGIN
      IF p_own <= 0 THEN RETURN true; END IF;
      PERFORM pg_advisory_xact_lock_shared(hashtext(p_tenant), hashtext(p_counter));
      SELECT coalesce(sum(delta), 0) INTO total FROM counter_deltas WHERE tenant_id = p_tenant AND counter = p_counter;
      IF total + p_own + holders - 1 > p_limit THEN
        RAISE EXCEPTION 'quota of % near its limit: check it exactly', p_counter USING ERRCODE = 'PW001';
      END IF;
      RETURN true;
    END
    $fn$
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS license_quota_shared(text, text, bigint, bigint)')
}
