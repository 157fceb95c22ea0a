import type { Knex } from 'knex'

// Every tenant table is keyed by tenant: tenant_id leads its primary key, its unique constraints,
// its foreign keys and its indexes. That is what a tenant-sharded PostgreSQL (Citus, distributed
// by tenant_id; db/distribute.ts) needs: a key, a unique constraint or a foreign key can only be
// checked inside one shard when it includes the distribution column. On a single PostgreSQL it
// costs nothing: every statement already filters by tenant.
//
// No row moves and no id changes: ids stay the same uuids (still unique in practice, now only
// required to be unique per tenant). Existing rows already satisfy the wider keys, since a key
// that was unique on (id) is unique on (tenant_id, id), and every referencing row carries the
// tenant of the row it references (lib writes both in one statement). That last point is checked
// first: a row whose tenant differs from its parent's would make the new foreign key fail, and
// the migration then stops with the table named instead of half-done (one transaction).
//
// objects_tenant_id already was a unique (tenant_id, id) index: it becomes the primary key as it
// is, so the largest table gets no new index build. The other keys are rebuilt; on a large
// installation run this release in a maintenance window
// (docs/operations.md "Moving a running installation to Citus").
const FOREIGN_KEYS: Array<[child: string, columns: string, parent: string, name: string]> = [
  ['object_type_versions', 'type_id', 'object_types', 'object_type_versions_type_id_fkey'],
  ['objects', 'type_id', 'object_types', 'objects_type_id_fkey'],
  ['object_versions', 'object_id', 'objects', 'object_versions_object_id_fkey'],
  ['workflow_versions', 'workflow_id', 'workflows', 'workflow_versions_workflow_id_fkey'],
  ['rule_versions', 'rule_id', 'rules', 'rule_versions_rule_id_fkey'],
  ['relations', 'from_object_id', 'objects', 'relations_from_object_id_fkey'],
  ['relations', 'to_object_id', 'objects', 'relations_to_object_id_fkey']
]

async function assertSameTenant (knex: Knex): Promise<void> {
  for (const [child, column, parent] of FOREIGN_KEYS) {
    const r = await knex.raw(`SELECT count(*)::int AS n FROM ${child} c JOIN ${parent} p ON p.id = c.${column} WHERE p.tenant_id <> c.tenant_id`)
    if (r.rows[0].n > 0) throw new Error(`${child}.${column}: ${r.rows[0].n} rows reference a row of another tenant in ${parent}; fix them before this migration`)
  }
}

export async function up (knex: Knex): Promise<void> {
  await assertSameTenant(knex)
  for (const [child, , , name] of FOREIGN_KEYS) await knex.raw(`ALTER TABLE ${child} DROP CONSTRAINT ${name}`)
  await knex.raw(`
    ALTER TABLE object_types DROP CONSTRAINT object_types_pkey, ADD CONSTRAINT object_types_pkey PRIMARY KEY (tenant_id, id);
    ALTER TABLE object_type_versions DROP CONSTRAINT object_type_versions_pkey,
      ADD CONSTRAINT object_type_versions_pkey PRIMARY KEY (tenant_id, type_id, version);
    ALTER TABLE objects DROP CONSTRAINT objects_pkey, ADD CONSTRAINT objects_pkey PRIMARY KEY USING INDEX objects_tenant_id;
    ALTER TABLE object_versions DROP CONSTRAINT object_versions_pkey,
      ADD CONSTRAINT object_versions_pkey PRIMARY KEY (tenant_id, object_id, version);
    ALTER TABLE workflows DROP CONSTRAINT workflows_pkey, ADD CONSTRAINT workflows_pkey PRIMARY KEY (tenant_id, id);
    ALTER TABLE workflow_versions DROP CONSTRAINT workflow_versions_pkey,
      ADD CONSTRAINT workflow_versions_pkey PRIMARY KEY (tenant_id, workflow_id, version);
    ALTER TABLE rules DROP CONSTRAINT rules_pkey, ADD CONSTRAINT rules_pkey PRIMARY KEY (tenant_id, id);
    ALTER TABLE rule_versions DROP CONSTRAINT rule_versions_pkey, ADD CONSTRAINT rule_versions_pkey PRIMARY KEY (tenant_id, rule_id, version);
    ALTER TABLE relations DROP CONSTRAINT relations_pkey, ADD CONSTRAINT relations_pkey PRIMARY KEY (tenant_id, id);
    ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey, ADD CONSTRAINT audit_events_pkey PRIMARY KEY (tenant_id, id);
    ALTER TABLE outbox_events DROP CONSTRAINT outbox_events_pkey, ADD CONSTRAINT outbox_events_pkey PRIMARY KEY (tenant_id, id);

    -- Relation ends: each step of a graph walk and the foreign-key checks of an object row.
    DROP INDEX relations_from;
    DROP INDEX relations_to;
    CREATE INDEX relations_from ON relations (tenant_id, from_object_id);
    CREATE INDEX relations_to ON relations (tenant_id, to_object_id);

    -- History geometry (asOf bbox reads) by tenant, like the current table's (202611230202).
    DROP INDEX object_versions_geom_gist;
    CREATE INDEX object_versions_tenant_geom_gist ON object_versions USING gist (tenant_id, geom);

    -- Undelivered events per tenant in order (the dispatcher claims one tenant at a time).
    DROP INDEX outbox_events_pending;
    CREATE INDEX outbox_events_pending ON outbox_events (tenant_id, position) WHERE delivered_at IS NULL;
  `)
  for (const [child, column, parent, name] of FOREIGN_KEYS) {
    await knex.raw(`ALTER TABLE ${child} ADD CONSTRAINT ${name} FOREIGN KEY (tenant_id, ${column}) REFERENCES ${parent} (tenant_id, id)`)
  }
}

export async function down (knex: Knex): Promise<void> {
  for (const [child, , , name] of FOREIGN_KEYS) await knex.raw(`ALTER TABLE ${child} DROP CONSTRAINT ${name}`)
  await knex.raw(`
    DROP INDEX outbox_events_pending;
    CREATE INDEX outbox_events_pending ON outbox_events (position) WHERE delivered_at IS NULL;
    DROP INDEX object_versions_tenant_geom_gist;
    CREATE INDEX object_versions_geom_gist ON object_versions USING gist (geom);
    DROP INDEX relations_from;
    DROP INDEX relations_to;
    CREATE INDEX relations_from ON relations (from_object_id);
    CREATE INDEX relations_to ON relations (to_object_id);
    ALTER TABLE outbox_events DROP CONSTRAINT outbox_events_pkey, ADD CONSTRAINT outbox_events_pkey PRIMARY KEY (id);
    ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey, ADD CONSTRAINT audit_events_pkey PRIMARY KEY (id);
    ALTER TABLE relations DROP CONSTRAINT relations_pkey, ADD CONSTRAINT relations_pkey PRIMARY KEY (id);
    ALTER TABLE rule_versions DROP CONSTRAINT rule_versions_pkey, ADD CONSTRAINT rule_versions_pkey PRIMARY KEY (rule_id, version);
    ALTER TABLE rules DROP CONSTRAINT rules_pkey, ADD CONSTRAINT rules_pkey PRIMARY KEY (id);
    ALTER TABLE workflow_versions DROP CONSTRAINT workflow_versions_pkey, ADD CONSTRAINT workflow_versions_pkey PRIMARY KEY (workflow_id, version);
    ALTER TABLE workflows DROP CONSTRAINT workflows_pkey, ADD CONSTRAINT workflows_pkey PRIMARY KEY (id);
    ALTER TABLE object_versions DROP CONSTRAINT object_versions_pkey, ADD CONSTRAINT object_versions_pkey PRIMARY KEY (object_id, version);
    ALTER TABLE objects DROP CONSTRAINT objects_pkey, ADD CONSTRAINT objects_pkey PRIMARY KEY (id);
    CREATE UNIQUE INDEX objects_tenant_id ON objects (tenant_id, id);
    ALTER TABLE object_type_versions DROP CONSTRAINT object_type_versions_pkey, ADD CONSTRAINT object_type_versions_pkey PRIMARY KEY (type_id, version);
    ALTER TABLE object_types DROP CONSTRAINT object_types_pkey, ADD CONSTRAINT object_types_pkey PRIMARY KEY (id);
  `)
  for (const [child, column, parent, name] of FOREIGN_KEYS) {
    await knex.raw(`ALTER TABLE ${child} ADD CONSTRAINT ${name} FOREIGN KEY (${column}) REFERENCES ${parent} (id)`)
  }
}
