import type { Config } from '../config.js'
import type { Db } from '../db.js'
import { environmentLicenseStatus } from '../license/status.js'
import { recordedRelease } from '../release/index.js'

export interface Readiness {
  ready: boolean
  body: { status: 'ok' | 'error', checks: { database: string, license: string, release: string } }
}

/** Ready when the database answers, the license verifies and the database runs our release. */
export async function readiness (db: Db, config: Readonly<Config>): Promise<Readiness> {
  let database = 'ok'
  let release = 'ok'
  try {
    const recorded = await recordedRelease(db)
    if (recorded !== config.release) release = recorded === null ? 'not_recorded' : `mismatch: database has ${recorded}, process is ${config.release}`
  } catch {
    database = 'unreachable'
    release = 'unknown'
  }
  const license = environmentLicenseStatus(config.license)
  const ready = database === 'ok' && release === 'ok' && license !== 'invalid'
  return { ready, body: { status: ready ? 'ok' : 'error', checks: { database, license, release } } }
}
