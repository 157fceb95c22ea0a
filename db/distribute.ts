import type { Knex } from 'knex'

// On a Citus cluster (the citus extension present in the database), the release distributes every
// table of the public schema that has a tenant_id column by it, all co-located (one tenant's rows
// of every table on one shard group, so a statement filtered by one tenant runs on one node and
// foreign keys hold inside the shard). Global tables stay on the coordinator as plain tables:
// releases, knex's own, and pg-boss's schema. `tenants` (one row per tenant, joined with tenant
// tables by the worker's sweeps) becomes a reference table, copied to every node. Idempotent:
// tables already in Citus's metadata are skipped, so every release distributes only new tables.
//
// Foreign keys between tenant tables (all include tenant_id since 202611240200) are dropped for the
// move and re-created afterwards, in the same transaction: Citus cannot distribute a table that a
// plain table still references. Rows already in a table (a database restored from a single
// PostgreSQL) are copied into the shards, then the coordinator's local copy is emptied.

const REFERENCE_TABLES = ['tenants']

export async function hasCitus (db: Knex): Promise<boolean> {
  const r = await db.raw("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
  return r.rows.length > 0
}

export interface Distribution { distributed: string[], reference: string[] }

export async function distributeTenantTables (db: Knex): Promise<Distribution> {
  if (!(await hasCitus(db))) return { distributed: [], reference: [] }
  return db.transaction(async tx => {
    // Foreign keys and their re-creation must not open parallel connections per shard in a
    // transaction that also created the shards (Citus's advice for DDL in one transaction).
    await tx.raw("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    const known = new Set((await tx.raw('SELECT logicalrelid::regclass::text AS t FROM pg_dist_partition')).rows.map((r: { t: string }) => r.t))
    const tenantTables: string[] = (await tx.raw(`
      SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      ORDER BY c.relname`)).rows.map((r: { t: string }) => r.t)
    const reference = REFERENCE_TABLES.filter(t => !known.has(t))
    const distributed = tenantTables.filter(t => !known.has(t))
    if (reference.length === 0 && distributed.length === 0) return { distributed, reference }

    const fks: Array<{ t: string, name: string, def: string }> = (await tx.raw(`
      SELECT conrelid::regclass::text AS t, conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE contype = 'f' AND (conrelid::regclass::text = ANY(?) OR confrelid::regclass::text = ANY(?))`,
    [distributed, distributed])).rows
    for (const fk of fks) await tx.raw(`ALTER TABLE ${ident(fk.t)} DROP CONSTRAINT ${ident(fk.name)}`)
    const holdingRows: string[] = []
    for (const t of [...reference, ...distributed]) {
      if ((await tx.raw(`SELECT EXISTS (SELECT 1 FROM ${ident(t)}) AS e`)).rows[0].e === true) holdingRows.push(t)
    }

    for (const t of reference) await tx.raw('SELECT create_reference_table(?)', [t])
    // The first distributed table anchors the co-location group; tables of an earlier release
    // already form it.
    const anchor = (await tx.raw(`SELECT logicalrelid::regclass::text AS t FROM pg_dist_partition
      WHERE partmethod = 'h' ORDER BY colocationid, logicalrelid::regclass::text LIMIT 1`)).rows[0]?.t as string | undefined
    let colocateWith = anchor ?? 'default'
    for (const t of distributed) {
      await tx.raw('SELECT create_distributed_table(?, ?, colocate_with => ?)', [t, 'tenant_id', colocateWith])
      if (colocateWith === 'default') colocateWith = t
    }
    for (const fk of fks) await tx.raw(`ALTER TABLE ${ident(fk.t)} ADD CONSTRAINT ${ident(fk.name)} ${fk.def}`)
    for (const t of holdingRows) await tx.raw('SELECT truncate_local_data_after_distributing_table(?)', [t])
    return { distributed, reference }
  })
}

function ident (name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}
