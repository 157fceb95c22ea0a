import path from 'node:path'
import type { Config } from '../lib/config.js'
import type { ModuleHooks } from '../lib/context.js'
import type { Logger } from '../lib/log.js'
import { startEmbeddedRuntime, type Runtime } from '../lib/runtime.js'
import { DataDirLockedError } from '../lib/embedded/secret.js'
import { issueAccessToken } from '../lib/access/index.js'
import { EMBEDDED_NOTE } from '../lib/health/index.js'
import { runRelease } from '../db/release.js'
import { DEMO_TENANT } from '../db/seeds/demo.js'
import { startWorker } from '../worker/start.js'

/**
 * Embedded mode's start (no DATABASE_URL): PGlite in the data folder, the release on it, the
 * worker in this process next to the API. The caller listens, then calls `announce`.
 */
export async function startEmbeddedOrExit (config: Readonly<Config>, log: Logger, hooks: ModuleHooks): Promise<{ rt: Runtime, stopWorker: () => void, announce: (port: number) => void }> {
  const dataDir = path.resolve(config.dataDir)
  log.info({ mode: 'embedded', dataDir, note: EMBEDDED_NOTE }, 'starting in embedded mode (first start takes about half a minute)')
  let rt: Runtime
  try {
    rt = await startEmbeddedRuntime(config, log, (db, boss, l, release) => runRelease(db, boss, l, release, hooks))
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      process.stderr.write(`startup failed: ${err.message}\n`)
      process.exit(1)
    }
    throw err
  }
  const stopWorker = await startWorker(rt, config, log, hooks)
  return { rt, stopWorker, announce: port => { process.stdout.write(banner(config, dataDir, port)) } }
}

function banner (config: Readonly<Config>, dataDir: string, port: number): string {
  const base = `http://localhost:${port}`
  const lifetime = config.auth.maxLifetimeSeconds
  const token = config.auth.disabled ? null : issueAccessToken(config.auth, { sub: 'dev', tenant: DEMO_TENANT, roles: ['owner'] }, lifetime)
  const auth = token === null ? '' : ` -H "Authorization: Bearer $TOKEN"`
  return [
    '',
    `  Spatial platform, embedded mode: ${base}`,
    `  data folder: ${dataDir} (one process at a time; delete it to start afresh)`,
    `  ${EMBEDDED_NOTE}.`,
    '',
    ...(token === null ? [] : [
      `  A development token (owner of the demo tenant, valid ${lifetime} s, AUTH_JWT_MAX_LIFETIME; \`npm run token -- --tenant demo --roles owner\` makes more):`,
      `  export TOKEN=${token}`
    ]),
    '  Try:',
    `  curl -s ${base}/v1/auth/me${auth}`,
    `  curl -s ${base}/v1/object-types${auth}`,
    `  The map: ${base}/map${token === null ? '' : `#token=${token}`}`,
    '',
    ''
  ].join('\n')
}
