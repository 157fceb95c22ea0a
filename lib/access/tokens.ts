import { createSecretKey, type KeyObject } from 'node:crypto'
import jwt from 'jsonwebtoken'
import type { Config } from '../config.js'

export const TENANT_RE = /^[A-Za-z0-9._-]{1,64}$/
export const SYSTEM_TENANT = '_system'

export interface Identity {
  sub: string
  tenant: string
  roles: string[]
  scope: string | null
  /** When the token expires (its exp, in ms): what lasts longer than a request (a change stream) ends then. */
  expiresAtMs: number
}

export type TokenCheck =
  | { ok: true, identity: Identity }
  /** `auditTenant`: the token's tenant when its signature verified (e.g. expired), else `_system`. */
  | { ok: false, reason: string, auditTenant: string, sub: string | null }

// jsonwebtoken turns a string secret into a KeyObject on every verify; keep one per secret.
const keys = new Map<string, KeyObject>()
function secretKey (secret: string): KeyObject {
  let k = keys.get(secret)
  if (!k) { k = createSecretKey(Buffer.from(secret, 'utf8')); keys.set(secret, k) }
  return k
}

// Verified tokens, per auth configuration: the same token string always verifies the same way
// under the same secret, issuer and audience, so only expiry needs checking again. Bounded;
// the oldest entry goes first.
const verified = new WeakMap<Config['auth'], Map<string, { identity: Identity }>>()
const MAX_VERIFIED = 10_000

/** docs/behaviour.md "Authentication and roles": HS256 only; iss/aud when configured; sub, tenant and exp required. */
export function verifyAccessToken (auth: Config['auth'], token: string | null): TokenCheck {
  let cache = verified.get(auth)
  if (!cache) { cache = new Map(); verified.set(auth, cache) }
  const hit = token === null ? undefined : cache.get(token)
  if (hit !== undefined && Date.now() < hit.identity.expiresAtMs) return { ok: true, identity: hit.identity }
  if (hit !== undefined) cache.delete(token as string)
  const check = verifyUncached(auth, token)
  if (check.ok && token !== null) {
    if (cache.size >= MAX_VERIFIED) cache.delete(cache.keys().next().value as string)
    cache.set(token, { identity: check.identity })
  }
  return check
}

/**
 * jwt.verify under the current secret, or, while a rotation runs (AUTH_JWT_SECRET_PREVIOUS), under
 * the previous one when the current one finds the signature invalid (docs/operations.md
 * "Rotating AUTH_JWT_SECRET").
 */
function verifySigned (auth: Config['auth'], token: string): string | jwt.JwtPayload {
  const options: jwt.VerifyOptions = {
    algorithms: ['HS256'],
    ...(auth.issuer !== null ? { issuer: auth.issuer } : {}),
    ...(auth.audience !== null ? { audience: auth.audience } : {})
  }
  try {
    return jwt.verify(token, secretKey(auth.jwtSecret), options)
  } catch (err) {
    if (auth.previousJwtSecret === null || !(err instanceof jwt.JsonWebTokenError) || err.message !== 'invalid signature') throw err
    return jwt.verify(token, secretKey(auth.previousJwtSecret), options)
  }
}

function verifyUncached (auth: Config['auth'], token: string | null): TokenCheck {
  const fail = (reason: string, auditTenant = SYSTEM_TENANT, sub: string | null = null): TokenCheck => ({ ok: false, reason, auditTenant, sub })
  if (token === null || token === '') return fail('missing bearer token')
  let claims: jwt.JwtPayload
  try {
    const decoded = verifySigned(auth, token)
    if (typeof decoded === 'string') return fail('token payload is not a JSON object')
    claims = decoded
  } catch (err) {
    if (err instanceof jwt.TokenExpiredError) {
      // The signature verified before the expiry check, so the tenant claim can be trusted for audit.
      const p = jwt.decode(token, { json: true })
      const tenant = typeof p?.tenant === 'string' && TENANT_RE.test(p.tenant) ? p.tenant : SYSTEM_TENANT
      return fail('token expired', tenant, typeof p?.sub === 'string' ? p.sub : null)
    }
    return fail(err instanceof Error ? err.message : 'invalid token')
  }
  const tenant = claims.tenant
  if (typeof tenant !== 'string' || !TENANT_RE.test(tenant)) return fail('token has no valid tenant claim')
  // `_system` holds the platform's own audit chain; no token may act as that tenant.
  if (tenant === SYSTEM_TENANT) return fail('tenant _system is reserved')
  if (typeof claims.sub !== 'string' || claims.sub === '') return fail('token has no sub claim', tenant)
  const lifetime = lifetimeFault(claims, auth.maxLifetimeSeconds)
  if (lifetime !== null) return fail(lifetime, tenant, claims.sub)
  const roles = claims.roles ?? []
  if (!Array.isArray(roles) || !roles.every(r => typeof r === 'string')) return fail('roles claim must be an array of strings', tenant, claims.sub)
  if (claims.scope !== undefined && typeof claims.scope !== 'string') return fail('scope claim must be a string', tenant, claims.sub)
  return { ok: true, identity: { sub: claims.sub, tenant, roles, scope: claims.scope ?? null, expiresAtMs: (claims.exp as number) * 1000 } }
}

/**
 * A token must expire, and live at most `maxSeconds`: from its iat, or from now when it has none
 * or names a future one (so a forged-ahead iat cannot stretch it). jwt.verify has checked exp's type.
 */
function lifetimeFault (claims: jwt.JwtPayload, maxSeconds: number): string | null {
  if (claims.exp === undefined) return 'token has no exp claim (access tokens must expire)'
  const now = Math.floor(Date.now() / 1000)
  const from = typeof claims.iat === 'number' ? Math.min(claims.iat, now) : now
  return claims.exp - from > maxSeconds ? `token lifetime exceeds the maximum of ${maxSeconds} seconds` : null
}

export function anonymousIdentity (auth: Config['auth']): Identity {
  return { sub: 'anonymous', tenant: auth.defaultTenant, roles: ['owner'], scope: null, expiresAtMs: Infinity }
}

/**
 * A development access token that verifyAccessToken accepts under `auth` (HS256 with the
 * configured secret, issuer and audience). The service never issues tokens to callers; this is
 * for `npm run token` and embedded mode's start banner.
 */
export function issueAccessToken (auth: Config['auth'], claims: { sub: string, tenant: string, roles: string[], scope?: string }, expiresInSeconds: number): string {
  return jwt.sign({ ...claims }, secretKey(auth.jwtSecret), {
    algorithm: 'HS256',
    expiresIn: expiresInSeconds,
    ...(auth.issuer !== null ? { issuer: auth.issuer } : {}),
    ...(auth.audience !== null ? { audience: auth.audience } : {})
  })
}
