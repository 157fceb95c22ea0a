import type { Knex } from 'knex'

// The four extensions SPEC names. PostGIS comes from the OS package (postgresql-15-postgis-3).
export async function up (knex: Knex): Promise<void> {
  await knex.raw('CREATE EXTENSION IF NOT EXISTS postgis')
  await knex.raw('CREATE EXTENSION IF NOT EXISTS pgcrypto')
  await knex.raw('CREATE EXTENSION IF NOT EXISTS "uuid-ossp"')
  await knex.raw('CREATE EXTENSION IF NOT EXISTS pg_trgm')
}

export async function down (): Promise<void> {
  // Extensions may be shared with other schemas: never dropped by a rollback.
}
