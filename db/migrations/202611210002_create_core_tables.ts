import type { Knex } from 'knex'

export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE tenants (
      id text PRIMARY KEY,
      created_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE releases (
      version text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE object_types (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id text NOT NULL,
      key text NOT NULL,
      latest_version integer NOT NULL DEFAULT 1,
      published_version integer,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    );
    -- key is unique per tenant among live types; a deleted type frees its key.
    CREATE UNIQUE INDEX object_types_tenant_key ON object_types (tenant_id, key) WHERE deleted_at IS NULL;
    CREATE INDEX object_types_tenant_created ON object_types (tenant_id, created_at, id);

    -- Every version of a type's definition; objects validate against published_version.
    CREATE TABLE object_type_versions (
      type_id uuid NOT NULL REFERENCES object_types (id),
      version integer NOT NULL,
      tenant_id text NOT NULL,
      status text NOT NULL CHECK (status IN ('draft', 'sandbox', 'published')),
      definition jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      created_by text,
      sandbox_at timestamptz,
      published_at timestamptz,
      PRIMARY KEY (type_id, version)
    );

    -- publicId {{seq}}: one counter per tenant and type.
    CREATE TABLE public_id_counters (
      tenant_id text NOT NULL,
      type_id uuid NOT NULL,
      value bigint NOT NULL,
      PRIMARY KEY (tenant_id, type_id)
    );

    -- The current state of each object. deleted_at marks a soft delete.
    CREATE TABLE objects (
      id uuid PRIMARY KEY,
      tenant_id text NOT NULL,
      type_id uuid NOT NULL REFERENCES object_types (id),
      type_version integer NOT NULL,
      public_id text NOT NULL,
      attributes jsonb NOT NULL DEFAULT '{}',
      geom geometry(Geometry, 4326),
      workflow_state text,
      version integer NOT NULL,
      valid_from timestamptz NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      deleted_at timestamptz
    );
    CREATE INDEX objects_geom_gist ON objects USING gist (geom);
    CREATE INDEX objects_tenant_created ON objects (tenant_id, created_at, id) WHERE deleted_at IS NULL;
    CREATE INDEX objects_tenant_type_created ON objects (tenant_id, type_id, created_at, id) WHERE deleted_at IS NULL;
    CREATE UNIQUE INDEX objects_tenant_public_id ON objects (tenant_id, public_id);
    CREATE INDEX objects_attributes_gin ON objects USING gin (attributes jsonb_path_ops);

    -- Bitemporal history: one row per version. [tx_from, tx_to) is transaction time (when the
    -- database knew it), [valid_from, valid_to) is valid time (when it was true in the world).
    -- The current version has tx_to and valid_to NULL. A 'deleted' row closes the timeline.
    CREATE TABLE object_versions (
      object_id uuid NOT NULL REFERENCES objects (id),
      version integer NOT NULL,
      tenant_id text NOT NULL,
      type_id uuid NOT NULL,
      public_id text NOT NULL,
      operation text NOT NULL CHECK (operation IN ('created', 'updated', 'deleted', 'transitioned')),
      attributes jsonb NOT NULL,
      geom geometry(Geometry, 4326),
      workflow_state text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      valid_from timestamptz NOT NULL,
      valid_to timestamptz,
      tx_from timestamptz NOT NULL,
      tx_to timestamptz,
      actor jsonb,
      PRIMARY KEY (object_id, version)
    );
    CREATE INDEX object_versions_tenant_tx ON object_versions (tenant_id, tx_from);
    CREATE INDEX object_versions_geom_gist ON object_versions USING gist (geom);

    -- Audit: rows arrive unsequenced (sequence NULL) inside the write's transaction; the
    -- sequencer assigns sequence, previous_hash and hash under the tenant's head lock.
    -- The unique index makes a fork impossible even if the sequencer were wrong.
    CREATE TABLE audit_events (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      arrival bigserial NOT NULL,
      tenant_id text NOT NULL,
      sequence bigint,
      type text NOT NULL,
      actor jsonb,
      resource_type text,
      resource_id text,
      data jsonb NOT NULL DEFAULT '{}',
      occurred_at timestamptz NOT NULL,
      previous_hash text,
      hash text
    );
    CREATE UNIQUE INDEX audit_events_tenant_sequence ON audit_events (tenant_id, sequence);
    CREATE INDEX audit_events_pending ON audit_events (tenant_id, arrival) WHERE sequence IS NULL;
    CREATE INDEX audit_events_tenant_type ON audit_events (tenant_id, type, sequence);
    CREATE INDEX audit_events_tenant_resource ON audit_events (tenant_id, resource_type, resource_id, sequence);

    CREATE TABLE audit_heads (
      tenant_id text PRIMARY KEY,
      sequence bigint NOT NULL,
      hash text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    -- Domain events, written in the same transaction as the change they describe.
    CREATE TABLE outbox_events (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      position bigserial NOT NULL,
      tenant_id text NOT NULL,
      type text NOT NULL,
      aggregate_type text NOT NULL,
      aggregate_id text NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz,
      attempts integer NOT NULL DEFAULT 0,
      last_error text
    );
    CREATE INDEX outbox_events_pending ON outbox_events (position) WHERE delivered_at IS NULL;
    CREATE INDEX outbox_events_tenant ON outbox_events (tenant_id, position);
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`DROP TABLE IF EXISTS outbox_events, audit_heads, audit_events, object_versions, objects,
    public_id_counters, object_type_versions, object_types, releases, tenants CASCADE`)
}
