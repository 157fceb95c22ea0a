import type { Knex } from 'knex'

export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    -- Directed, typed links between two objects of one tenant. deleted_at marks a soft delete;
    -- a deleted link is kept (and can be restored) but is never followed by graph expansion.
    CREATE TABLE relations (
      id uuid PRIMARY KEY,
      tenant_id text NOT NULL,
      from_object_id uuid NOT NULL REFERENCES objects (id),
      to_object_id uuid NOT NULL REFERENCES objects (id),
      relation_type text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}',
      inherits_geometry boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      deleted_at timestamptz,
      CONSTRAINT relations_no_self_link CHECK (from_object_id <> to_object_id)
    );
    -- At most one active link per (from, to, type): a duplicate create or restore is a 409.
    CREATE UNIQUE INDEX relations_active_link ON relations (tenant_id, from_object_id, to_object_id, relation_type)
      WHERE deleted_at IS NULL;
    -- Lookups by either end, each step of graph expansion, and the foreign-key checks when an
    -- object row is removed. Object ids are unique across tenants, so the end leads (a tenant_id
    -- prefix would leave the foreign-key checks without an index). Not partial: asOf walks and
    -- includeDeleted lists also read soft-deleted links.
    CREATE INDEX relations_from ON relations (from_object_id);
    CREATE INDEX relations_to ON relations (to_object_id);
    -- Lists (default order createdAt, id), including soft-deleted links with includeDeleted.
    CREATE INDEX relations_tenant_created ON relations (tenant_id, created_at, id);
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS relations')
}
