import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Knex } from 'knex'

const here = path.dirname(fileURLToPath(import.meta.url))
// Source runs (tsx, tests) load .ts migrations; the compiled release loads dist/db/migrations/*.js.
const ext = path.extname(fileURLToPath(import.meta.url))

const TABLE = 'knex_migrations'

export const migrationConfig: Knex.MigratorConfig = {
  directory: path.join(here, 'migrations'),
  loadExtensions: [ext],
  tableName: TABLE
}

export async function migrateLatest (db: Knex): Promise<string[]> {
  // Knex records each migration under its file name, extension included: .ts when the sources ran
  // (tsx: `npm start`, the tests), .js when the build did. One database may see both (tried from
  // source, then released from dist/ by the Procfile), and knex then calls the directory corrupt;
  // so the names recorded take this run's extension first.
  if (await db.schema.hasTable(TABLE)) {
    await db(TABLE).whereRaw("name ~ '\\.(ts|js)$' AND right(name, 3) <> ?", [ext]).update({ name: db.raw("regexp_replace(name, '\\.(ts|js)$', ?)", [ext]) })
  }
  const [, applied] = await db.migrate.latest(migrationConfig) as [number, string[]]
  return applied
}
