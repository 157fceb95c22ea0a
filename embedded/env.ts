import { embeddedDataDir } from '../lib/config.js'
import { embeddedSecret } from '../lib/embedded/secret.js'

type Env = Record<string, string | undefined>

/**
 * Embedded mode (no DATABASE_URL) needs no secret from the user: unless AUTH_JWT_SECRET is set,
 * the one kept in the data folder (made on first start) verifies tokens. Other modes: unchanged.
 */
export function embeddedEnv (env: Env): Env {
  const databaseUrl = env.DATABASE_URL
  if ((databaseUrl !== undefined && databaseUrl.trim() !== '') || (env.AUTH_JWT_SECRET ?? '').trim() !== '') return env
  return { ...env, AUTH_JWT_SECRET: embeddedSecret(embeddedDataDir(env)) }
}
