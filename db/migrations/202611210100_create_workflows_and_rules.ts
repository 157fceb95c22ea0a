import type { Knex } from 'knex'

export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    -- Workflows: every create or PATCH appends a version that is effective at once; objects
    -- follow latest_version (docs/behaviour.md "Object types and the schema registry").
    CREATE TABLE workflows (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id text NOT NULL,
      key text NOT NULL,
      latest_version integer NOT NULL DEFAULT 1,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
    );
    CREATE UNIQUE INDEX workflows_tenant_key ON workflows (tenant_id, key);
    CREATE INDEX workflows_tenant_created ON workflows (tenant_id, created_at, id);

    CREATE TABLE workflow_versions (
      workflow_id uuid NOT NULL REFERENCES workflows (id),
      version integer NOT NULL,
      tenant_id text NOT NULL,
      definition jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      created_by text,
      PRIMARY KEY (workflow_id, version)
    );

    -- Reusable guard rules: draft -> sandbox -> published, like object types. A guard
    -- {type:"rule"} evaluates published_version only. kind is fixed at creation.
    CREATE TABLE rules (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id text NOT NULL,
      key text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('jsonlogic', 'spatial')),
      latest_version integer NOT NULL DEFAULT 1,
      published_version integer,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
    );
    CREATE UNIQUE INDEX rules_tenant_key ON rules (tenant_id, key);
    CREATE INDEX rules_tenant_created ON rules (tenant_id, created_at, id);

    CREATE TABLE rule_versions (
      rule_id uuid NOT NULL REFERENCES rules (id),
      version integer NOT NULL,
      tenant_id text NOT NULL,
      status text NOT NULL CHECK (status IN ('draft', 'sandbox', 'published')),
      definition jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      created_by text,
      sandbox_at timestamptz,
      published_at timestamptz,
      PRIMARY KEY (rule_id, version)
    );

    -- One spatial guard test, isolated: a GEOS or GeoJSON error in one guard becomes
    -- {"error": ...} for that guard (which then fails closed) instead of aborting the
    -- transaction. dwithin measures in meters on the sphere (use_spheroid = false).
    CREATE FUNCTION workflow_spatial_test (op text, subject geometry, target_geojson text, meters double precision)
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $fn$
    DECLARE
      target geometry;
    BEGIN
      -- Parsed inside the block: errors in DECLARE initialisers escape the handler below.
      target := ST_SetSRID(ST_GeomFromGeoJSON(target_geojson), 4326);
      RETURN CASE op
        WHEN 'within' THEN jsonb_build_object('passed', ST_Within(subject, target))
        WHEN 'intersects' THEN jsonb_build_object('passed', ST_Intersects(subject, target))
        WHEN 'contains' THEN jsonb_build_object('passed', ST_Contains(subject, target))
        WHEN 'disjoint' THEN jsonb_build_object('passed', ST_Disjoint(subject, target))
        WHEN 'dwithin' THEN jsonb_build_object(
          'passed', ST_DWithin(subject::geography, target::geography, meters, false),
          'distanceMeters', ST_Distance(subject::geography, target::geography, false))
        ELSE jsonb_build_object('error', 'unknown spatial operator ' || op)
      END;
    EXCEPTION WHEN OTHERS THEN
      RETURN jsonb_build_object('error', SQLERRM);
    END
    $fn$;
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION IF EXISTS workflow_spatial_test (text, geometry, text, double precision);
    DROP TABLE IF EXISTS rule_versions, rules, workflow_versions, workflows CASCADE;
  `)
}
