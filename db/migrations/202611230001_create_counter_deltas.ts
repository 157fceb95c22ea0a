import type { Knex } from 'knex'

// Exact per-tenant counters (lib/counters) kept as insert-only deltas: a write adds rows in its
// own transaction and never updates a shared row, so concurrent writers of one tenant never wait
// on each other. A worker folds each group's rows into one from time to time; the sum is the same
// in every snapshot before and after a fold. `delta` is INCLUDEd so sums are index-only scans.
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE counter_deltas (
      tenant_id text NOT NULL,
      counter text NOT NULL,
      bucket text NOT NULL DEFAULT '',
      id bigint GENERATED ALWAYS AS IDENTITY,
      delta bigint NOT NULL,
      CONSTRAINT counter_deltas_pkey PRIMARY KEY (tenant_id, counter, bucket, id) INCLUDE (delta)
    );

    -- What existing databases already hold: live objects and changes per (tenant, type).
    INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
      SELECT tenant_id, 'objects', type_id::text, count(*) FROM objects WHERE deleted_at IS NULL GROUP BY 1, 3;
    INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
      SELECT tenant_id, 'object_changes', type_id::text, count(*) FROM object_versions GROUP BY 1, 3;
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS counter_deltas')
}
