// For the knex CLI (npx knex migrate:status). The app itself migrates through db/setup.ts.
import { migrationConfig } from './db/knex.js'

export default {
  client: 'pg',
  connection: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/spatial',
  migrations: migrationConfig
}
