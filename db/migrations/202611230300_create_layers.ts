import type { Knex } from 'knex'

// Layer definitions (lib/layers): reusable export configurations, addressed by id or by a slug
// unique per tenant. `version` grows by 1 per PATCH: it is part of every export's ETag and cache
// key, so a definition change invalidates what was rendered from the old one. A delete removes
// the row (the audit chain keeps what it was).
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE layers (
      tenant_id text NOT NULL,
      id uuid NOT NULL,
      slug text NOT NULL,
      name text NOT NULL,
      description text,
      definition jsonb NOT NULL,
      cache_ttl_seconds integer,
      version integer NOT NULL DEFAULT 1,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CONSTRAINT layers_pkey PRIMARY KEY (tenant_id, id),
      CONSTRAINT layers_tenant_slug UNIQUE (tenant_id, slug)
    );
    CREATE INDEX layers_tenant_created ON layers (tenant_id, created_at, id);
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS layers')
}
