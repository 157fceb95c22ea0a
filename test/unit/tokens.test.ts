import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHmac, generateKeyPairSync } from 'node:crypto'
import jwt from 'jsonwebtoken'
import { loadConfig, type Config } from '../../lib/config.js'
import { SYSTEM_TENANT, anonymousIdentity, verifyAccessToken, type TokenCheck } from '../../lib/access/tokens.js'

const SECRET = 'unit-test-secret-with-more-than-32-chars'
const auth = (env: Record<string, string> = {}): Config['auth'] =>
  loadConfig({ DATABASE_URL: 'postgres://u@h/d', AUTH_JWT_SECRET: SECRET, ...env }).auth
const AUTH = auth()
const now = () => Math.floor(Date.now() / 1000)
/** Signs with an hour's lifetime unless the claims or options say when it expires. */
const sign = (claims: object, opts: jwt.SignOptions = {}, secret = SECRET) =>
  jwt.sign(claims, secret, { algorithm: 'HS256', ...('exp' in claims || opts.expiresIn !== undefined ? {} : { expiresIn: '1h' }), ...opts })
const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')

function failed (check: TokenCheck): Extract<TokenCheck, { ok: false }> {
  assert.equal(check.ok, false, 'expected the token to be refused')
  return check as Extract<TokenCheck, { ok: false }>
}

describe('verifyAccessToken', () => {
  it('accepts an HS256 token with sub and tenant; roles and scope are optional', () => {
    const exp = now() + 3600
    assert.deepEqual(verifyAccessToken(AUTH, sign({ sub: 'u1', tenant: 'acme', exp })), {
      ok: true, identity: { sub: 'u1', tenant: 'acme', roles: [], scope: null, expiresAtMs: exp * 1000 }
    })
    const soon = now() + 60
    assert.deepEqual(verifyAccessToken(AUTH, sign({ sub: 'u1', tenant: 'acme', roles: ['viewer'], scope: 'objects:read', iat: now(), exp: soon })), {
      ok: true, identity: { sub: 'u1', tenant: 'acme', roles: ['viewer'], scope: 'objects:read', expiresAtMs: soon * 1000 }
    })
  })

  it('refuses a missing or empty token', () => {
    assert.equal(failed(verifyAccessToken(AUTH, null)).auditTenant, SYSTEM_TENANT)
    failed(verifyAccessToken(AUTH, ''))
  })

  it('refuses garbage', () => {
    failed(verifyAccessToken(AUTH, 'not-a-jwt'))
    failed(verifyAccessToken(AUTH, 'a.b.c'))
  })

  it('refuses a token signed with another secret, and does not trust its tenant for audit', () => {
    const f = failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme' }, {}, 'another-secret-that-is-long-enough-yes')))
    assert.equal(f.auditTenant, SYSTEM_TENANT)
  })

  it('refuses alg none', () => {
    const t = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'u', tenant: 'acme', roles: ['owner'] })}.`
    failed(verifyAccessToken(AUTH, t))
  })

  it('refuses HS512 and RS256 even when the signature is valid for that algorithm', () => {
    failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme' }, { algorithm: 'HS512' })))
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    failed(verifyAccessToken(AUTH, jwt.sign({ sub: 'u', tenant: 'acme' }, privateKey, { algorithm: 'RS256' })))
  })

  it('keeps a verified token only until it expires: the same string is refused after its exp', async () => {
    const exp = now() + 1
    const t = sign({ sub: 'u-exp', tenant: 'acme', exp })
    assert.equal(verifyAccessToken(AUTH, t).ok, true)
    assert.equal(verifyAccessToken(AUTH, t).ok, true, 'the second check is answered from the cache')
    await new Promise(resolve => setTimeout(resolve, exp * 1000 - Date.now() + 50))
    const f = failed(verifyAccessToken(AUTH, t))
    assert.match(f.reason, /expired/)
    assert.equal(f.auditTenant, 'acme')
  })

  it('verifies a token again under another auth configuration (the cache is per configuration)', () => {
    const t = sign({ sub: 'u', tenant: 'acme' })
    assert.equal(verifyAccessToken(AUTH, t).ok, true)
    failed(verifyAccessToken(auth({ AUTH_JWT_SECRET: 'another-secret-that-is-long-enough-yes' }), t))
  })

  it('refuses an expired token, auditing to its tenant because the signature verified', () => {
    const f = failed(verifyAccessToken(AUTH, sign({ sub: 'u7', tenant: 'acme', exp: now() - 5 })))
    assert.equal(f.auditTenant, 'acme')
    assert.equal(f.sub, 'u7')
    assert.match(f.reason, /expired/)
  })

  it('refuses an expired token with a bad signature, auditing to _system', () => {
    const f = failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', exp: now() - 5 }, {}, 'x'.repeat(40))))
    assert.equal(f.auditTenant, SYSTEM_TENANT)
  })

  it('refuses a token without exp, auditing to its tenant because the signature verified', () => {
    const f = failed(verifyAccessToken(AUTH, jwt.sign({ sub: 'u8', tenant: 'acme' }, SECRET, { algorithm: 'HS256' })))
    assert.match(f.reason, /exp/)
    assert.equal(f.auditTenant, 'acme')
    assert.equal(f.sub, 'u8')
    // jsonwebtoken signs no exp that is not a number; made by hand.
    const data = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: 'u', tenant: 'acme', exp: 'tomorrow' })}`
    failed(verifyAccessToken(AUTH, `${data}.${createHmac('sha256', SECRET).update(data).digest('base64url')}`))
  })

  it('refuses a token that lives longer than AUTH_JWT_MAX_LIFETIME (default a day), from iat or else from now', () => {
    const t = now()
    assert.equal(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', iat: t, exp: t + 86_400 })).ok, true)
    assert.match(failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', iat: t, exp: t + 86_401 }))).reason, /lifetime/)
    // An old iat counts: the token's whole life is bounded, not what is left of it.
    failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', iat: t - 86_400, exp: t + 60 })))
    // Without iat (or with one in the future) the lifetime counts from now.
    failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', exp: t + 86_500 }, { noTimestamp: true })))
    assert.equal(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', exp: t + 3600 }, { noTimestamp: true })).ok, true)
    failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', iat: t + 86_400, exp: t + 86_500 })))
    const short = auth({ AUTH_JWT_MAX_LIFETIME: '600' })
    failed(verifyAccessToken(short, sign({ sub: 'u', tenant: 'acme' }, { expiresIn: 601 })))
    assert.equal(verifyAccessToken(short, sign({ sub: 'u', tenant: 'acme' }, { expiresIn: 600 })).ok, true)
  })

  it('refuses a token not yet valid (nbf in the future)', () => {
    failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', nbf: now() + 600 })))
  })

  it('refuses a missing, empty or non-string sub', () => {
    failed(verifyAccessToken(AUTH, sign({ tenant: 'acme' })))
    failed(verifyAccessToken(AUTH, sign({ sub: '', tenant: 'acme' })))
    failed(verifyAccessToken(AUTH, sign({ sub: 42, tenant: 'acme' })))
  })

  it('refuses a missing tenant or one outside 1..64 of A-Za-z0-9._-', () => {
    for (const tenant of [undefined, '', 'a b', 'x/y', 'ü', 'a'.repeat(65), 7]) {
      failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant })))
    }
    assert.equal(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'a'.repeat(64) })).ok, true)
    assert.equal(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'A-z_0.9' })).ok, true)
  })

  it('refuses roles that are not an array of strings, and a non-string scope', () => {
    for (const roles of ['owner', [1], ['owner', null], { owner: true }]) {
      failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', roles })))
    }
    failed(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme', scope: ['objects:read'] })))
  })

  it('checks iss and aud only when configured', () => {
    const strict = auth({ AUTH_JWT_ISSUER: 'https://idp', AUTH_JWT_AUDIENCE: 'spatial' })
    const good = sign({ sub: 'u', tenant: 'acme' }, { issuer: 'https://idp', audience: 'spatial' })
    assert.equal(verifyAccessToken(strict, good).ok, true)
    failed(verifyAccessToken(strict, sign({ sub: 'u', tenant: 'acme' }, { issuer: 'https://evil', audience: 'spatial' })))
    failed(verifyAccessToken(strict, sign({ sub: 'u', tenant: 'acme' }, { issuer: 'https://idp', audience: 'other' })))
    failed(verifyAccessToken(strict, sign({ sub: 'u', tenant: 'acme' })))
    // Without configuration, any iss/aud is accepted.
    assert.equal(verifyAccessToken(AUTH, sign({ sub: 'u', tenant: 'acme' }, { issuer: 'whoever', audience: 'whatever' })).ok, true)
  })
})

describe('anonymousIdentity', () => {
  it('is the AUTH_DISABLED identity: anonymous owner of the default tenant', () => {
    assert.deepEqual(anonymousIdentity(auth({ AUTH_DISABLED: 'true' })), { sub: 'anonymous', tenant: 'default', roles: ['owner'], scope: null, expiresAtMs: Infinity })
    assert.deepEqual(anonymousIdentity(auth({ AUTH_DISABLED: 'true', AUTH_DEFAULT_TENANT: 'dev' })).tenant, 'dev')
  })
})
