import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Knex } from 'knex'

const here = path.dirname(fileURLToPath(import.meta.url))
// Source runs (tsx, tests) load .ts migrations; the compiled release loads dist/db/migrations/*.js.
const ext = path.extname(fileURLToPath(import.meta.url))

export const migrationConfig: Knex.MigratorConfig = {
  directory: path.join(here, 'migrations'),
  loadExtensions: [ext],
  tableName: 'knex_migrations'
}

export async function migrateLatest (db: Knex): Promise<string[]> {
  const [, applied] = await db.migrate.latest(migrationConfig) as [number, string[]]
  return applied
}
