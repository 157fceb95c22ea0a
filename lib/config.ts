import { createPrivateKey } from 'node:crypto'

// Configuration is parsed once, from a plain env object, into a frozen typed value.
// Nothing else in the code base reads process.env (tests pass literal objects).

export type LogLevel = 'error' | 'warn' | 'info' | 'debug'

export interface Config {
  port: number
  /** null: embedded mode (PGlite under `dataDir`, API and worker in one process; lib/embedded). */
  databaseUrl: string | null
  /** Embedded mode's data folder (the database, its lock and the generated token secret). */
  dataDir: string
  auth: {
    jwtSecret: string
    /** AUTH_JWT_SECRET_PREVIOUS: still accepted for verification while a secret is rotated; null: none. */
    previousJwtSecret: string | null
    issuer: string | null
    audience: string | null
    defaultTenant: string
    disabled: boolean
    /** The longest life a token may have: exp - iat (or exp - now without iat), in seconds. */
    maxLifetimeSeconds: number
  }
  rateLimit: { ttlSeconds: number, limit: number }
  /**
   * Per-tenant fairness in each API process (server/middleware/tenant-gate.ts): requests of one
   * tenant in flight at once (0: no gate), how many more may wait, and for how long.
   */
  tenantGate: { maxConcurrent: number, maxQueued: number, maxWaitMs: number, maxConcurrentHeavy: number, heavyBurst: number, heavyCreditMs: number, aloneMs: number, heavyBytesPerSecond: number }
  layerCacheTtlSeconds: number
  /**
   * The change feed's live streams (lib/changes): open streams per tenant in each API process
   * (more: 429), the heartbeat interval, and the bytes a stream may hold unsent before it is
   * dropped (a slow consumer resumes from its last event id).
   */
  changes: { maxStreamsPerTenant: number, heartbeatMs: number, bufferBytes: number }
  license: {
    publicKey: string | null
    key: string | null
    storageSecret: string | null
    expiringSoonDays: number
  }
  redisUrl: string | null
  logLevel: LogLevel
  maxBodyBytes: number
  evaluationThreads: number
  metricsToken: string | null
  webhookAllowPrivateNetworks: boolean
  /**
   * The API's public base URL (scheme, host, port and any path prefix a reverse proxy adds, no
   * trailing slash): the start of every absolute link it writes (OGC API Features, TileJSON).
   * null: each request's own scheme and Host header.
   */
  publicUrl: string | null
  automation: {
    /** Per outgoing webhook attempt (docs/behaviour.md "Automation": 30 s). */
    webhookTimeoutMs: number
    /** Succeeded, skipped and dry-run runs are pruned after this many days. */
    runRetentionDays: number
    /** Failed runs are kept longer. */
    failedRunRetentionDays: number
  }
  /** Delivered outbox events are deleted after this many hours (undelivered ones never). */
  outboxRetentionHours: number
  /** How often a worker's pg-boss looks for jobs of dead workers (expired) to hand out again. */
  workerSuperviseSeconds: number
  /**
   * How often an idle worker looks for jobs it was not told of (worker/automation.ts): queued jobs
   * are announced to every worker (lib/queues `announceQueued`), so this is only the backstop.
   */
  workerPollSeconds: number
  /**
   * The longest a process drains on SIGTERM (docs/operations.md "Rolling restart"): the API for
   * its requests in progress, a worker for its active jobs; what is still running then is cut.
   */
  shutdownTimeoutSeconds: number
  /**
   * The longest a statement of the API may run (PostgreSQL statement_timeout of its pool; 0: no
   * limit); a statement it cancels answers 503 NOT_READY. A NDJSON stream's COPY is not bound by
   * it (lib/layers/stream.ts), nor are the workers' jobs.
   */
  dbStatementTimeoutMs: number
  /**
   * The shorter bound of the requests whose cost the caller chooses: query-DSL runs, GeoJSON and
   * OGC export pages, dry-run validation (lib/db withStatementTimeout; 0: only the pool's). Never
   * longer than dbStatementTimeoutMs when that is set.
   */
  queryStatementTimeoutMs: number
  /** The size of one GraphQL document: tokens (at parse), field selections and root fields of an operation, aliases included (server/graphql/limits.ts). */
  graphql: { maxTokens: number, maxFields: number, maxRootFields: number }
  /** Port of the worker's own /metrics (null: not served). */
  workerMetricsPort: number | null
  /** `async` sequences audit events after commit; `sync` takes the chain head lock inside the write. */
  auditSequencing: 'async' | 'sync'
  /** Ed25519 private key (PKCS#8 PEM) signing audit tree heads; null: derived from AUTH_JWT_SECRET (lib/audit/signing.ts). */
  auditSigningKey: string | null
  release: string
}

/** A bad or missing variable: `variable` names it, `message` says how to fix it. */
export class ConfigError extends Error {
  constructor (readonly variable: string, message: string) {
    super(`${variable}: ${message}`)
  }
}

type Env = Record<string, string | undefined>

function str (env: Env, name: string): string | null {
  const v = env[name]
  return v === undefined || v.trim() === '' ? null : v
}

// Echoed values are JSON-quoted so a value holding a newline still makes ONE error line
// (docs/behaviour.md "Platform"). Secrets and URLs (which may hold passwords) are never echoed.
function int (env: Env, name: string, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = str(env, name)
  if (raw === null) return def
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got ${JSON.stringify(raw)}`)
  const n = Number(raw)
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`)
  return n
}

function bool (env: Env, name: string, def: boolean): boolean {
  const raw = str(env, name)
  if (raw === null) return def
  const v = raw.trim().toLowerCase()
  if (v === 'true' || v === '1') return true
  if (v === 'false' || v === '0') return false
  throw new ConfigError(name, `must be true or false, got ${JSON.stringify(raw)}`)
}

function oneOf<T extends string> (env: Env, name: string, allowed: readonly T[], def: T): T {
  const raw = str(env, name)
  if (raw === null) return def
  const v = raw.trim().toLowerCase() as T
  if (!allowed.includes(v)) throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`)
  return v
}

function url (env: Env, name: string, protocols: string[]): string | null {
  const raw = str(env, name)
  if (raw === null) return null
  let parsed: URL
  try { parsed = new URL(raw) } catch { throw new ConfigError(name, 'is not a valid URL') }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must start with ${protocols.map(p => p + '//').join(' or ')}`)
  }
  return raw
}

/** PUBLIC_URL as links start with it: a base without query, fragment or trailing slash. */
function publicUrl (env: Env): string | null {
  const raw = url(env, 'PUBLIC_URL', ['http:', 'https:'])
  if (raw === null) return null
  const u = new URL(raw)
  if (u.search !== '' || u.hash !== '' || u.username !== '' || u.password !== '') {
    throw new ConfigError('PUBLIC_URL', 'must be a base URL such as https://maps.example.com or https://example.com/gis, without query, fragment or credentials')
  }
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`
}

function isEd25519PrivateKey (pem: string): boolean {
  try { return createPrivateKey(pem).asymmetricKeyType === 'ed25519' } catch { return false }
}

/** DATA_DIR, default ./data (read here and by entry points that need it before the secret exists). */
export function embeddedDataDir (env: Env): string {
  return str(env, 'DATA_DIR') ?? 'data'
}

/** Entry points that need a PostgreSQL server (worker, release job) end with one line without one. */
export function requireDatabaseUrl (config: Readonly<Config>, what: string): string {
  if (config.databaseUrl !== null) return config.databaseUrl
  process.stderr.write(`configuration error: DATABASE_URL: the ${what} needs a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/spatial ` +
    '(without DATABASE_URL, `npm start` runs the embedded mode: API, worker and release in one process)\n')
  process.exit(1)
}

const TENANT_RE = /^[A-Za-z0-9._-]{1,64}$/

export function loadConfig (env: Env, release = '0.0.0'): Readonly<Config> {
  const disabled = bool(env, 'AUTH_DISABLED', false)
  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:'])
  const jwtSecret = str(env, 'AUTH_JWT_SECRET') ?? ''
  if (!disabled && jwtSecret.length < 32) {
    throw new ConfigError('AUTH_JWT_SECRET', jwtSecret === '' ? 'is required (at least 32 characters)' : `must be at least 32 characters, got ${jwtSecret.length}`)
  }
  const previousJwtSecret = str(env, 'AUTH_JWT_SECRET_PREVIOUS')
  if (previousJwtSecret !== null && previousJwtSecret.length < 32) throw new ConfigError('AUTH_JWT_SECRET_PREVIOUS', `must be at least 32 characters, got ${previousJwtSecret.length}`)
  const defaultTenant = str(env, 'AUTH_DEFAULT_TENANT') ?? 'default'
  if (!TENANT_RE.test(defaultTenant)) throw new ConfigError('AUTH_DEFAULT_TENANT', 'must be 1 to 64 of A-Za-z0-9._-')
  const publicKey = str(env, 'LICENSE_PUBLIC_KEY')
  if (publicKey !== null && !publicKey.includes('BEGIN PUBLIC KEY')) {
    throw new ConfigError('LICENSE_PUBLIC_KEY', 'must be an RSA public key in PEM form (-----BEGIN PUBLIC KEY-----)')
  }
  const storageSecret = str(env, 'LICENSE_STORAGE_SECRET')
  if (storageSecret !== null && storageSecret.length < 32) {
    throw new ConfigError('LICENSE_STORAGE_SECRET', 'must be at least 32 characters')
  }
  // A PEM given on one line with literal \n separators is accepted as well.
  const auditSigningKey = str(env, 'AUDIT_SIGNING_KEY')?.replace(/\\n/g, '\n') ?? null
  if (auditSigningKey !== null && !isEd25519PrivateKey(auditSigningKey)) {
    throw new ConfigError('AUDIT_SIGNING_KEY', 'must be an Ed25519 private key in PKCS#8 PEM form (openssl genpkey -algorithm ed25519)')
  }
  const dbStatementTimeoutMs = int(env, 'DB_STATEMENT_TIMEOUT_MS', 60_000, 0, 86_400_000)
  const queryStatementTimeoutMs = int(env, 'QUERY_STATEMENT_TIMEOUT_MS', 5000, 0, 86_400_000)
  const metricsToken = str(env, 'METRICS_TOKEN')
  if (metricsToken !== null && metricsToken.length < 16) throw new ConfigError('METRICS_TOKEN', 'must be at least 16 characters')

  return Object.freeze({
    port: int(env, 'PORT', 3000, 0, 65535),
    databaseUrl,
    dataDir: embeddedDataDir(env),
    auth: Object.freeze({
      jwtSecret,
      previousJwtSecret,
      issuer: str(env, 'AUTH_JWT_ISSUER'),
      audience: str(env, 'AUTH_JWT_AUDIENCE'),
      defaultTenant,
      disabled,
      maxLifetimeSeconds: int(env, 'AUTH_JWT_MAX_LIFETIME', 86_400, 60, 31_536_000)
    }),
    rateLimit: Object.freeze({ ttlSeconds: int(env, 'RATE_LIMIT_TTL', 60, 1), limit: int(env, 'RATE_LIMIT_LIMIT', 120, 1) }),
    // 8 of the pool's 20 connections: two tenants at their limit still leave the others some.
    tenantGate: Object.freeze({
      maxConcurrent: int(env, 'TENANT_MAX_CONCURRENT_REQUESTS', 8, 0, 10_000),
      maxQueued: int(env, 'TENANT_MAX_QUEUED_REQUESTS', 64, 0, 100_000),
      maxWaitMs: int(env, 'TENANT_QUEUE_TIMEOUT_MS', 10_000, 1, 600_000),
      // Requests whose cost the caller chooses (RouteSpec.heavy) each keep a database backend busy
      // on a core of its own: one per tenant and process leaves the other cores to everyone's
      // short requests (docs/behaviour.md "Per-tenant fairness").
      maxConcurrentHeavy: int(env, 'TENANT_MAX_CONCURRENT_HEAVY_REQUESTS', 1, 0, 10_000),
      // Beyond that, up to 4 at once while the tenant's heavy requests stay short: the lane charges
      // each the time it held a slot against a credit earned at the lane's own pace (tenant-gate.ts).
      heavyBurst: int(env, 'TENANT_HEAVY_BURST_REQUESTS', 4, 0, 10_000),
      heavyCreditMs: int(env, 'TENANT_HEAVY_CREDIT_MS', 1000, 0, 600_000),
      // A tenant the process has served alone this long may run heavy requests up to
      // maxConcurrent: nobody else to protect (0: never).
      aloneMs: int(env, 'TENANT_ALONE_SECONDS', 30, 0, 86_400) * 1000,
      // A tenant's heavy answers are sent at most this fast together while other tenants use the
      // process, once a second's worth is spent, each holding its slot until then: its heavy work
      // per second is bounded by what it reads, not only by its slots (an unpaced NDJSON export
      // keeps its backend, the API and the reader busy at once). 0: never paced.
      heavyBytesPerSecond: int(env, 'TENANT_HEAVY_MIB_PER_SECOND', 8, 0, 100_000) * 1024 * 1024
    }),
    layerCacheTtlSeconds: int(env, 'LAYER_CACHE_TTL_SECONDS', 3600, 0),
    changes: Object.freeze({
      maxStreamsPerTenant: int(env, 'CHANGES_MAX_STREAMS_PER_TENANT', 100, 1, 1_000_000),
      heartbeatMs: int(env, 'CHANGES_HEARTBEAT_SECONDS', 15, 1, 3600) * 1000,
      bufferBytes: int(env, 'CHANGES_STREAM_BUFFER_BYTES', 1024 * 1024, 16 * 1024, 1024 * 1024 * 1024)
    }),
    license: Object.freeze({
      publicKey,
      key: str(env, 'LICENSE_KEY'),
      storageSecret,
      expiringSoonDays: int(env, 'LICENSE_EXPIRING_SOON_DAYS', 30, 0)
    }),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    logLevel: oneOf(env, 'LOG_LEVEL', ['error', 'warn', 'info', 'debug'] as const, 'info'),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024),
    // Threads that check dry-run documents off the event loop (lib/object-types evaluation.ts).
    evaluationThreads: int(env, 'EVALUATION_THREADS', 1, 1, 64),
    metricsToken,
    webhookAllowPrivateNetworks: bool(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    publicUrl: publicUrl(env),
    automation: Object.freeze({
      webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_SECONDS', 30, 1, 300) * 1000,
      runRetentionDays: int(env, 'AUTOMATION_RUN_RETENTION_DAYS', 7, 1),
      failedRunRetentionDays: int(env, 'AUTOMATION_FAILED_RUN_RETENTION_DAYS', 30, 1)
    }),
    outboxRetentionHours: int(env, 'OUTBOX_RETENTION_HOURS', 24, 1),
    workerSuperviseSeconds: int(env, 'WORKER_SUPERVISE_SECONDS', 60, 1, 3600),
    workerPollSeconds: int(env, 'WORKER_POLL_SECONDS', 2, 1, 300),
    shutdownTimeoutSeconds: int(env, 'SHUTDOWN_TIMEOUT_SECONDS', 20, 1, 3600),
    dbStatementTimeoutMs,
    queryStatementTimeoutMs: dbStatementTimeoutMs > 0 && queryStatementTimeoutMs > 0 ? Math.min(dbStatementTimeoutMs, queryStatementTimeoutMs) : queryStatementTimeoutMs,
    graphql: Object.freeze({ maxTokens: int(env, 'GRAPHQL_MAX_TOKENS', 10_000, 100, 10_000_000), maxFields: int(env, 'GRAPHQL_MAX_FIELDS', 1000, 1, 1_000_000), maxRootFields: int(env, 'GRAPHQL_MAX_ROOT_FIELDS', 20, 1, 100_000) }),
    workerMetricsPort: str(env, 'WORKER_METRICS_PORT') === null ? null : int(env, 'WORKER_METRICS_PORT', 0, 0, 65535),
    auditSequencing: oneOf(env, 'AUDIT_SEQUENCING', ['async', 'sync'] as const, 'async'),
    auditSigningKey,
    release
  })
}

/** Entry points call this: a bad value ends the process with one line naming the variable. */
export function loadConfigOrExit (env: Env, release: string): Readonly<Config> {
  try {
    return loadConfig(env, release)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`)
      process.exit(1)
    }
    throw err
  }
}
