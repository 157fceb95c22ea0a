import type { Knex } from 'knex'

// Per-tenant settings that every process caches and that change rarely (lib/license, lib/policy):
// an installed license (sealed with AES-256-GCM; the plaintext never reaches the database) and the
// permission policy. Live-record counters for the custom license limits are backfilled into
// counter_deltas (lib/counters) from what the database already holds.
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE tenant_licenses (
      tenant_id text NOT NULL,
      sealed text NOT NULL,
      installed_at timestamptz NOT NULL DEFAULT now(),
      installed_by text,
      CONSTRAINT tenant_licenses_pkey PRIMARY KEY (tenant_id)
    );
    CREATE TABLE permission_policies (
      tenant_id text NOT NULL,
      roles jsonb NOT NULL,
      version integer NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      updated_by text,
      CONSTRAINT permission_policies_pkey PRIMARY KEY (tenant_id)
    );
    INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
      SELECT tenant_id, 'relations', '', count(*) FROM relations WHERE deleted_at IS NULL GROUP BY 1;
    INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
      SELECT tenant_id, 'object_types', '', count(*) FROM object_types WHERE deleted_at IS NULL GROUP BY 1;
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS tenant_licenses;
    DROP TABLE IF EXISTS permission_policies;
    DELETE FROM counter_deltas WHERE counter IN ('relations', 'object_types');
  `)
}
