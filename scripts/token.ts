// A development access token for the configured secret: npm run token -- --tenant demo --roles owner
// PostgreSQL mode signs with AUTH_JWT_SECRET (and AUTH_JWT_ISSUER / AUTH_JWT_AUDIENCE when set);
// embedded mode (no DATABASE_URL) with the secret kept in the data folder (DATA_DIR, default ./data),
// made here if the service has not started yet. Prints the token alone on stdout.
import { parseArgs } from 'node:util'
import { loadConfigOrExit } from '../lib/config.js'
import { issueAccessToken, TENANT_RE } from '../lib/access/index.js'
import { packageVersion } from '../lib/release/version.js'
import { embeddedEnv } from '../embedded/env.js'

const USAGE = `usage: npm run -s token -- --tenant <id> [--roles owner,admin,...] [--sub <subject>] [--scope "objects:read ..."] [--days <n>]
Defaults: --roles owner, --sub dev, --days: the longest AUTH_JWT_MAX_LIFETIME allows (1 by default).`

function main (): void {
  const { values } = parseArgs({
    options: {
      tenant: { type: 'string' },
      roles: { type: 'string', default: 'owner' },
      sub: { type: 'string', default: 'dev' },
      scope: { type: 'string' },
      days: { type: 'string' },
      help: { type: 'boolean' }
    }
  })
  if (values.help === true) { console.log(USAGE); return }
  if (values.tenant === undefined || !TENANT_RE.test(values.tenant)) throw new Error('--tenant is required (1 to 64 of A-Za-z0-9._-)')
  const roles = values.roles.split(',').map(r => r.trim()).filter(r => r !== '')
  const config = loadConfigOrExit(embeddedEnv(process.env), packageVersion())
  if (config.auth.disabled) throw new Error('AUTH_DISABLED is true: the service takes no tokens')
  const max = config.auth.maxLifetimeSeconds
  const seconds = values.days === undefined ? max : Math.round(Number(values.days) * 24 * 3600)
  if (!(seconds > 0)) throw new Error('--days must be a positive number')
  // The service refuses a token that lives longer (docs/behaviour.md "Authentication and roles").
  if (seconds > max) throw new Error(`--days ${values.days} is longer than AUTH_JWT_MAX_LIFETIME allows (${max} seconds)`)
  const claims = { sub: values.sub, tenant: values.tenant, roles, ...(values.scope !== undefined ? { scope: values.scope } : {}) }
  console.log(issueAccessToken(config.auth, claims, seconds))
}

try {
  main()
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n${USAGE}\n`)
  process.exit(2)
}
