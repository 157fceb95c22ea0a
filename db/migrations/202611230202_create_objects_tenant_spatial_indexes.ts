import type { Knex } from 'knex'

// The spatial indexes serve one tenant's rows: GiST on (tenant_id, geom) and on (tenant_id,
// geom::geography) through btree_gist (a contrib extension shipped with PostgreSQL), instead of
// the global GiST indexes on geom and geom::geography. With a global index a small tenant's bbox
// reads every tenant's entries in the box and then intersects them with a bitmap of all its own
// rows; (tenant_id, geom) reads only the tenant's own entries, whatever the neighbours hold
// (docs/performance.md). Partitioning by tenant would do the same at the cost of a partition per
// tenant; Citus shards by tenant_id anyway.
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE EXTENSION IF NOT EXISTS btree_gist;
    CREATE INDEX IF NOT EXISTS objects_tenant_geom_gist ON objects USING gist (tenant_id, geom);
    CREATE INDEX IF NOT EXISTS objects_tenant_geog_gist ON objects USING gist (tenant_id, (geom::geography));
    DROP INDEX IF EXISTS objects_geom_gist;
    DROP INDEX IF EXISTS objects_geog_gist;
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE INDEX IF NOT EXISTS objects_geom_gist ON objects USING gist (geom);
    CREATE INDEX IF NOT EXISTS objects_geog_gist ON objects USING gist ((geom::geography));
    DROP INDEX IF EXISTS objects_tenant_geom_gist;
    DROP INDEX IF EXISTS objects_tenant_geog_gist;
  `)
}
