import type { Knex } from 'knex'

export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    -- The query service's dwithin measures on the sphere: ST_DWithin(geom::geography, ...).
    -- PostGIS can use this expression index for it (geography boxes are geocentric, so long
    -- edges bulging towards a pole are still found, which a planar box prefilter would miss).
    -- Every stored geometry is validated to WGS84 ranges, so the cast cannot fail.
    CREATE INDEX objects_geog_gist ON objects USING gist ((geom::geography));
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS objects_geog_gist')
}
