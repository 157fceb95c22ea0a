import type { Knex } from 'knex'

export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    -- Automation rules (lib/automation). status is what runs: draft never runs; sandbox and active
    -- run live_version. A PATCH of a sandbox or active rule writes latest_version + 1 as a draft
    -- that goes live on the next publish (docs/behaviour.md "Automation").
    CREATE TABLE automation_rules (
      tenant_id text NOT NULL,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'sandbox', 'active')),
      latest_version integer NOT NULL DEFAULT 1,
      live_version integer,
      -- The webhook slug of the latest version (unique while the rule exists) and of the live one
      -- (what the ingress serves).
      slug text,
      live_slug text,
      token_hash text,
      signing_secret text,
      -- The roles of whoever last published the rule: the rule acts with them (guards see them).
      actor_roles text[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      deleted_at timestamptz,
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX automation_rules_tenant_slug ON automation_rules (tenant_id, slug) WHERE deleted_at IS NULL AND slug IS NOT NULL;
    CREATE UNIQUE INDEX automation_rules_tenant_live_slug ON automation_rules (tenant_id, live_slug) WHERE deleted_at IS NULL AND live_slug IS NOT NULL;
    CREATE INDEX automation_rules_tenant_created ON automation_rules (tenant_id, created_at, id) WHERE deleted_at IS NULL;
    -- The outbox consumer's lookup: the live rules of a tenant.
    CREATE INDEX automation_rules_tenant_live ON automation_rules (tenant_id) WHERE deleted_at IS NULL AND status <> 'draft';

    CREATE TABLE automation_rule_versions (
      tenant_id text NOT NULL,
      rule_id uuid NOT NULL,
      version integer NOT NULL,
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'sandbox', 'active')),
      definition jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      created_by text,
      sandbox_at timestamptz,
      published_at timestamptz,
      PRIMARY KEY (tenant_id, rule_id, version),
      FOREIGN KEY (tenant_id, rule_id) REFERENCES automation_rules (tenant_id, id)
    );

    -- One row per run. (tenant_id, rule_id, trigger_key) is the exactly-once key: an outbox event
    -- id, a schedule tick (its pg-boss job id), an ingress request or a replay. It is written in
    -- the same transaction as the run's database effect.
    CREATE TABLE automation_runs (
      tenant_id text NOT NULL,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      rule_id uuid NOT NULL,
      rule_version integer NOT NULL,
      status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'skipped', 'dry_run')),
      trigger jsonb NOT NULL,
      trigger_key text NOT NULL,
      depth integer NOT NULL DEFAULT 0,
      input jsonb NOT NULL,
      matched boolean,
      condition_result boolean,
      steps jsonb NOT NULL DEFAULT '[]',
      request jsonb,
      -- The rendered outgoing call with its real header values (request shows them redacted);
      -- every attempt sends exactly these bytes. Never returned by the API.
      outgoing jsonb,
      response jsonb,
      attempt_log jsonb NOT NULL DEFAULT '[]',
      attempts integer NOT NULL DEFAULT 0,
      error jsonb,
      replay_of uuid,
      queued_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
      started_at timestamptz,
      finished_at timestamptz,
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, rule_id) REFERENCES automation_rules (tenant_id, id)
    );
    CREATE UNIQUE INDEX automation_runs_trigger ON automation_runs (tenant_id, rule_id, trigger_key);
    CREATE INDEX automation_runs_rule_queued ON automation_runs (tenant_id, rule_id, queued_at DESC, id);
    -- Retention sweeps finished runs per tenant by age.
    CREATE INDEX automation_runs_tenant_finished ON automation_runs (tenant_id, finished_at) WHERE finished_at IS NOT NULL;

    -- automation_rules_executed_total{ruleId}: bumped in each run's final transaction, read by the
    -- API at scrape time (runs execute in workers, which have no port; retention never lowers it).
    CREATE TABLE automation_rule_stats (
      tenant_id text NOT NULL,
      rule_id uuid NOT NULL,
      executed bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (tenant_id, rule_id)
    );
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS automation_rule_stats, automation_runs, automation_rule_versions, automation_rules CASCADE')
}
