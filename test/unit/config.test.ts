import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { ConfigError, loadConfig } from '../../lib/config.js'

const SECRET = 'x'.repeat(32)
const BASE = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/spatial', AUTH_JWT_SECRET: SECRET }
const PEM = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString()

/** Asserts loadConfig refuses `env` with a ConfigError naming `variable` (in the field and the message). */
function refuses (env: Record<string, string | undefined>, variable: string): void {
  assert.throws(() => loadConfig(env), (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`)
    assert.equal(err.variable, variable)
    assert.ok(err.message.startsWith(`${variable}: `), err.message)
    return true
  })
}

describe('loadConfig', () => {
  it('is pure: reads only the object it is given, never process.env, and does not change it', () => {
    const saved = process.env.RATE_LIMIT_LIMIT
    process.env.RATE_LIMIT_LIMIT = '7'
    try {
      const env = { ...BASE }
      const a = loadConfig(env, '1.2.3')
      const b = loadConfig(env, '1.2.3')
      assert.deepEqual(a, b)
      assert.equal(a.rateLimit.limit, 120)
      assert.deepEqual(env, BASE)
      assert.equal(a.release, '1.2.3')
    } finally {
      if (saved === undefined) delete process.env.RATE_LIMIT_LIMIT
      else process.env.RATE_LIMIT_LIMIT = saved
    }
  })

  it('returns a frozen value, nested sections included', () => {
    const c = loadConfig(BASE)
    assert.ok(Object.isFrozen(c))
    assert.ok(Object.isFrozen(c.auth))
    assert.ok(Object.isFrozen(c.rateLimit))
    assert.ok(Object.isFrozen(c.license))
  })

  it('applies the defaults of SPEC section 1 and docs/behaviour.md', () => {
    const c = loadConfig(BASE)
    assert.equal(c.port, 3000)
    assert.equal(c.databaseUrl, BASE.DATABASE_URL)
    assert.deepEqual({ ...c.auth }, { jwtSecret: SECRET, previousJwtSecret: null, issuer: null, audience: null, defaultTenant: 'default', disabled: false, maxLifetimeSeconds: 86_400 })
    assert.deepEqual({ ...c.rateLimit }, { ttlSeconds: 60, limit: 120 })
    assert.equal(c.layerCacheTtlSeconds, 3600)
    assert.deepEqual({ ...c.license }, { publicKey: null, key: null, storageSecret: null, expiringSoonDays: 30 })
    assert.equal(c.redisUrl, null)
    assert.equal(c.logLevel, 'info')
    assert.equal(c.maxBodyBytes, 1024 * 1024)
    assert.equal(c.metricsToken, null)
    assert.equal(c.webhookAllowPrivateNetworks, false)
    assert.equal(c.publicUrl, null)
    assert.equal(c.dbStatementTimeoutMs, 60_000)
  })

  it('parses every variable it knows', () => {
    const c = loadConfig({
      ...BASE,
      PORT: '8081',
      AUTH_JWT_ISSUER: 'https://idp.example',
      AUTH_JWT_AUDIENCE: 'spatial-api',
      AUTH_DEFAULT_TENANT: 'acme.dev',
      AUTH_DISABLED: 'false',
      AUTH_JWT_MAX_LIFETIME: '3600',
      RATE_LIMIT_TTL: '30',
      RATE_LIMIT_LIMIT: '5',
      LAYER_CACHE_TTL_SECONDS: '120',
      LICENSE_PUBLIC_KEY: PEM,
      LICENSE_KEY: 'a.b.c',
      LICENSE_STORAGE_SECRET: 's'.repeat(32),
      LICENSE_EXPIRING_SOON_DAYS: '10',
      REDIS_URL: 'redis://127.0.0.1:6379/2',
      LOG_LEVEL: 'debug',
      MAX_BODY_BYTES: '2048',
      METRICS_TOKEN: 'metrics-token-0123456789',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      PUBLIC_URL: 'https://example.com/gis/',
      DB_STATEMENT_TIMEOUT_MS: '0'
    })
    assert.equal(c.port, 8081)
    assert.equal(c.auth.issuer, 'https://idp.example')
    assert.equal(c.auth.audience, 'spatial-api')
    assert.equal(c.auth.defaultTenant, 'acme.dev')
    assert.equal(c.auth.disabled, false)
    assert.equal(c.auth.maxLifetimeSeconds, 3600)
    assert.deepEqual({ ...c.rateLimit }, { ttlSeconds: 30, limit: 5 })
    assert.equal(c.layerCacheTtlSeconds, 120)
    assert.equal(c.license.publicKey, PEM)
    assert.equal(c.license.key, 'a.b.c')
    assert.equal(c.license.storageSecret, 's'.repeat(32))
    assert.equal(c.license.expiringSoonDays, 10)
    assert.equal(c.redisUrl, 'redis://127.0.0.1:6379/2')
    assert.equal(c.logLevel, 'debug')
    assert.equal(c.maxBodyBytes, 2048)
    assert.equal(c.metricsToken, 'metrics-token-0123456789')
    assert.equal(c.webhookAllowPrivateNetworks, true)
    assert.equal(c.publicUrl, 'https://example.com/gis', 'without the trailing slash: links append /v1/...')
    assert.equal(c.dbStatementTimeoutMs, 0)
    assert.equal(loadConfig({ ...BASE, PUBLIC_URL: 'http://maps.example.com:8080' }).publicUrl, 'http://maps.example.com:8080')
  })

  it('accepts true/false and 1/0 for booleans, in any case', () => {
    assert.equal(loadConfig({ ...BASE, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'TRUE' }).webhookAllowPrivateNetworks, true)
    assert.equal(loadConfig({ ...BASE, WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1' }).webhookAllowPrivateNetworks, true)
    assert.equal(loadConfig({ ...BASE, AUTH_DISABLED: '0' }).auth.disabled, false)
    assert.equal(loadConfig({ ...BASE, LOG_LEVEL: 'WARN' }).logLevel, 'warn')
  })

  it('treats an empty or blank variable as unset', () => {
    const c = loadConfig({ ...BASE, PORT: '', REDIS_URL: '  ', AUTH_JWT_ISSUER: '' })
    assert.equal(c.port, 3000)
    assert.equal(c.redisUrl, null)
    assert.equal(c.auth.issuer, null)
  })

  describe('DATABASE_URL', () => {
    it('unset means embedded mode, with its data folder (DATA_DIR, default ./data)', () => {
      assert.equal(loadConfig({ AUTH_JWT_SECRET: SECRET }).databaseUrl, null)
      assert.equal(loadConfig({ AUTH_JWT_SECRET: SECRET, DATABASE_URL: ' ' }).dataDir, 'data')
      assert.equal(loadConfig({ AUTH_JWT_SECRET: SECRET, DATA_DIR: '/tmp/x' }).dataDir, '/tmp/x')
    })
    it('must be a postgres URL', () => refuses({ ...BASE, DATABASE_URL: 'mysql://root@localhost/db' }, 'DATABASE_URL'))
    it('must be a URL at all', () => refuses({ ...BASE, DATABASE_URL: 'not a url' }, 'DATABASE_URL'))
    it('accepts the postgresql: scheme too', () => {
      assert.equal(loadConfig({ ...BASE, DATABASE_URL: 'postgresql://u@h/d' }).databaseUrl, 'postgresql://u@h/d')
    })
  })

  describe('AUTH_JWT_SECRET', () => {
    it('is required', () => refuses({ DATABASE_URL: BASE.DATABASE_URL }, 'AUTH_JWT_SECRET'))
    it('needs at least 32 characters (31 is refused)', () => refuses({ ...BASE, AUTH_JWT_SECRET: 'y'.repeat(31) }, 'AUTH_JWT_SECRET'))
    it('accepts exactly 32 characters', () => {
      assert.equal(loadConfig({ ...BASE, AUTH_JWT_SECRET: 'y'.repeat(32) }).auth.jwtSecret, 'y'.repeat(32))
    })
    it('may be missing or short when AUTH_DISABLED=true', () => {
      assert.equal(loadConfig({ DATABASE_URL: BASE.DATABASE_URL, AUTH_DISABLED: 'true' }).auth.disabled, true)
      assert.equal(loadConfig({ ...BASE, AUTH_JWT_SECRET: 'short', AUTH_DISABLED: 'true' }).auth.disabled, true)
    })
  })

  describe('refuses a bad value, naming the variable', () => {
    const cases: Array<[string, string]> = [
      ['PORT', 'eighty'], ['PORT', '70000'], ['PORT', '-1'], ['PORT', '80.5'],
      ['RATE_LIMIT_TTL', '0'], ['RATE_LIMIT_TTL', '1m'],
      ['RATE_LIMIT_LIMIT', 'abc'], ['RATE_LIMIT_LIMIT', '0'], ['RATE_LIMIT_LIMIT', '1e3'],
      ['LAYER_CACHE_TTL_SECONDS', '-5'], ['LAYER_CACHE_TTL_SECONDS', 'hour'],
      ['LICENSE_EXPIRING_SOON_DAYS', 'soon'],
      ['MAX_BODY_BYTES', '1MB'], ['MAX_BODY_BYTES', '100'],
      ['AUTH_DISABLED', 'yes'], ['AUTH_DISABLED', 'on'],
      ['AUTH_JWT_SECRET_PREVIOUS', 'too-short'],
      ['AUTH_JWT_MAX_LIFETIME', '1d'], ['AUTH_JWT_MAX_LIFETIME', '0'], ['AUTH_JWT_MAX_LIFETIME', '59'], ['AUTH_JWT_MAX_LIFETIME', '31536001'],
      ['WEBHOOK_ALLOW_PRIVATE_NETWORKS', 'maybe'],
      ['LOG_LEVEL', 'verbose'], ['LOG_LEVEL', 'trace'],
      ['REDIS_URL', 'http://127.0.0.1:6379'], ['REDIS_URL', 'localhost:6379 x'],
      ['AUTH_DEFAULT_TENANT', 'has space'], ['AUTH_DEFAULT_TENANT', 'a/b'],
      ['LICENSE_PUBLIC_KEY', 'not-a-pem'],
      ['LICENSE_STORAGE_SECRET', 'too-short'],
      ['METRICS_TOKEN', 'short'],
      ['AUDIT_SEQUENCING', 'later'],
      ['PUBLIC_URL', 'maps.example.com'], ['PUBLIC_URL', 'ftp://maps.example.com'],
      ['PUBLIC_URL', 'https://maps.example.com/?x=1'], ['PUBLIC_URL', 'https://user:pw@maps.example.com'],
      ['AUDIT_SIGNING_KEY', 'not-a-pem'],
      ['AUDIT_SIGNING_KEY', generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()]
    ]
    for (const [name, value] of cases) {
      it(`${name}=${JSON.stringify(value)}`, () => refuses({ ...BASE, [name]: value }, name))
    }
  })

  it('keeps the message on one line even when the bad value holds a newline', () => {
    assert.throws(() => loadConfig({ ...BASE, RATE_LIMIT_LIMIT: '10\nLOG_LEVEL=debug' }), (err: unknown) => {
      assert.ok(err instanceof ConfigError)
      assert.equal(err.variable, 'RATE_LIMIT_LIMIT')
      assert.doesNotMatch(err.message, /\n/)
      return true
    })
  })

  it('never echoes a secret or a URL in its message', () => {
    const secret = 'sekrit-but-short'
    assert.throws(() => loadConfig({ ...BASE, AUTH_JWT_SECRET: secret }), (err: Error) => !err.message.includes(secret))
    assert.throws(() => loadConfig({ ...BASE, LICENSE_STORAGE_SECRET: secret }), (err: Error) => !err.message.includes(secret))
    assert.throws(() => loadConfig({ ...BASE, METRICS_TOKEN: 'tok-123' }), (err: Error) => !err.message.includes('tok-123'))
    assert.throws(() => loadConfig({ ...BASE, REDIS_URL: 'http://user:pa55word@h' }), (err: Error) => !err.message.includes('pa55word'))
    assert.throws(() => loadConfig({ ...BASE, DATABASE_URL: 'mysql://user:pa55word@h/d' }), (err: Error) => !err.message.includes('pa55word'))
  })

  it('accepts rediss:// for REDIS_URL', () => {
    assert.equal(loadConfig({ ...BASE, REDIS_URL: 'rediss://h:6380' }).redisUrl, 'rediss://h:6380')
  })
})
