import type { Config } from '../config.js'
import type { Db } from '../db.js'
import { environmentLicenseStatus } from '../license/status.js'
import { recordedRelease } from '../release/index.js'
import * as sql from './sql.js'
export { watchProcess } from './metrics.js'

export interface Readiness {
  ready: boolean
  body: { status: 'ok' | 'error', mode: 'postgres' | 'embedded', note?: string, checks: { database: string, license: string, release: string, shutdown?: 'draining' } }
}

/** What readiness and the start banner say in embedded mode (no DATABASE_URL). */
export const EMBEDDED_NOTE = 'embedded mode: PGlite in this one process, for trying things out on one machine; ' +
  'for real use set DATABASE_URL to a PostgreSQL server with PostGIS and run the Procfile (release, web, worker)'

/**
 * Ready when the database answers, the license verifies and the database runs our release
 * (docs/behaviour.md "Platform", SPEC 9.4). The database and the release are checked apart, so a
 * reachable database the setup job has not run against reads `database: ok, release: not_recorded`.
 * A process that is stopping (SIGTERM) is never ready: `shutdown: draining`.
 */
export async function readiness (db: Db, config: Readonly<Config>, stopping = false): Promise<Readiness> {
  const database = await checkDatabase(db)
  const release = database === 'ok' ? await checkRelease(db, config.release) : 'unknown'
  const license = environmentLicenseStatus(config.license)
  const ready = database === 'ok' && release === 'ok' && license !== 'invalid' && !stopping
  const mode = config.databaseUrl === null ? { mode: 'embedded' as const, note: EMBEDDED_NOTE } : { mode: 'postgres' as const }
  const checks = { database, license, release, ...(stopping ? { shutdown: 'draining' as const } : {}) }
  return { ready, body: { status: ready ? 'ok' : 'error', ...mode, checks } }
}

const DATABASE_TIMEOUT_MS = 2000

/** A database that hangs (rather than refusing) must not hold the probe for the pool's 10 s. */
async function checkDatabase (db: Db): Promise<string> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<string>(resolve => { timer = setTimeout(() => resolve('timeout'), DATABASE_TIMEOUT_MS) })
  const probe = sql.ping(db).then(() => 'ok', () => 'unreachable')
  try {
    return await Promise.race([probe, timeout])
  } finally {
    clearTimeout(timer)
  }
}

async function checkRelease (db: Db, mine: string): Promise<string> {
  let recorded: string | null
  try {
    recorded = await recordedRelease(db)
  } catch {
    return 'not_recorded' // no releases table: the setup job never ran here
  }
  if (recorded === mine) return 'ok'
  return recorded === null ? 'not_recorded' : `mismatch: database has ${recorded}, process is ${mine}`
}
