import type { Knex } from 'knex'

// license_quota_shared summed every delta row of (tenant, counter) written since the worker's last
// fold, each read with a heap fetch (fresh rows are never all-visible), so the check of each create
// grew with the write rate. It now keeps that sum short itself: after it passes, when the counter
// holds more than FOLD_ABOVE rows beyond one per bucket and no other write is folding it, it folds
// the counter's committed rows into one row per bucket in the write's own statement (totals never
// move: the rows and their sum change in one commit). It never waits: it folds only when it gets
// the tenant's fold lock without waiting, the lock every folder of counter_deltas takes
// (lib/counters tryFoldLock), so no other transaction is deleting these rows and the DELETE meets
// no row lock.
// Unchanged: the shared lock, the slack for every other holder, PW001 near the limit.
const FOLD_ABOVE = 32

const check = (fold: string) => `
  CREATE OR REPLACE FUNCTION license_quota_shared(p_tenant text, p_counter text, p_limit bigint, p_own bigint)
  RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
  DECLARE
    total bigint;
    n_rows bigint;
    n_buckets bigint;
    holders int := current_setting('max_connections')::int + current_setting('max_prepared_transactions')::int;
  BEGIN
    IF p_own <= 0 THEN RETURN true; END IF;
    PERFORM pg_advisory_xact_lock_shared(hashtext(p_tenant), hashtext(p_counter));
    SELECT coalesce(sum(delta), 0), count(*), count(DISTINCT bucket) INTO total, n_rows, n_buckets
      FROM counter_deltas WHERE tenant_id = p_tenant AND counter = p_counter;
    IF total + p_own + holders - 1 > p_limit THEN
      RAISE EXCEPTION 'quota of % near its limit: check it exactly', p_counter USING ERRCODE = 'PW001';
    END IF;
    ${fold}
    RETURN true;
  END
  $fn$`

const FOLD = `
    IF n_rows - n_buckets > ${FOLD_ABOVE} AND pg_try_advisory_xact_lock(hashtext(p_tenant), hashtext('counters.fold')) THEN
      WITH gone AS (
        DELETE FROM counter_deltas WHERE tenant_id = p_tenant AND counter = p_counter RETURNING bucket, delta
      )
      INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
      SELECT p_tenant, p_counter, bucket, sum(delta) FROM gone GROUP BY bucket;
    END IF;`

export async function up (knex: Knex): Promise<void> {
  await knex.raw(check(FOLD))
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(check(''))
}
