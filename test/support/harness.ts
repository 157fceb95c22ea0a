import http from 'node:http'
import { before, after } from 'node:test'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { randomUUID } from 'node:crypto'
import jwt from 'jsonwebtoken'
import { Redis } from 'ioredis'
import { loadConfig, type Config } from '../../lib/config.js'
import { createDb, type Db } from '../../lib/db.js'
import { createLogger, type Logger } from '../../lib/log.js'
import { Sequencer, sequencePending } from '../../lib/audit/index.js'
import { computePermissions } from '../../lib/access/index.js'
import type { ServiceContext } from '../../lib/context.js'
import { wireModules } from '../../lib/modules.js'
import { packageVersion } from '../../lib/release/index.js'
import { createApp } from '../../server/app.js'
import { warmEvaluation } from '../../lib/object-types/index.js'
import type { RouteSpec } from '../../server/http/route.js'
import { PgBoss } from 'pg-boss'
import { pgBossSender } from '../../jobs/enqueue.js'
import { createQueues } from '../../lib/queues/index.js'
import { startSettingsFeed } from '../../lib/settings/index.js'
import { TEST_DATABASE_URL, TEST_JWT_SECRET } from './env.js'

export const silentLog = createLogger('test', 'error')

export function testConfig (env: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    AUTH_JWT_SECRET: TEST_JWT_SECRET,
    RATE_LIMIT_LIMIT: '100000',
    // Tests burst one tenant's requests (80 creates at once): they wait for their turn rather than
    // meet the queue's bounds, which test/faults/tenant-fairness.test.ts sets itself.
    TENANT_MAX_QUEUED_REQUESTS: '100000',
    TENANT_QUEUE_TIMEOUT_MS: '60000',
    // Large fixtures (a 10,000-object graph walk) on a loaded CI machine or Citus take seconds;
    // test/faults/query-timeout.test.ts sets the bound it tests.
    QUERY_STATEMENT_TIMEOUT_MS: '0',
    LOG_LEVEL: 'error',
    ...env
  }, packageVersion())
}

/** A fresh tenant name per test: tests never see each other's data. */
export function newTenant (prefix = 't'): string {
  return `${prefix}-${randomUUID().slice(0, 12)}`
}

/** An access token valid for an hour, unless `claims.exp` or `opts.expiresIn` says otherwise (tokens must expire). */
export function token (claims: Record<string, unknown>, opts: jwt.SignOptions & { secret?: string } = {}): string {
  const { secret, ...sign } = opts
  const expiry = claims.exp !== undefined || sign.expiresIn !== undefined ? {} : { expiresIn: '1h' as const }
  return jwt.sign({ sub: 'user-1', ...claims }, secret ?? TEST_JWT_SECRET, { algorithm: 'HS256', ...expiry, ...sign })
}

export interface Response<T = any> {
  status: number
  headers: Headers
  body: T
  text: string
  /** On a 5xx answer: what the server logged last at level error (the cause, for the failure message). */
  logged?: string
}

export interface RequestOptions { token?: string, body?: unknown, headers?: Record<string, string>, raw?: string }

export interface TestServer {
  base: string
  /** The declared routes of the app the server runs. */
  routes: RouteSpec[]
  db: Db
  config: Readonly<Config>
  sequencer: Sequencer
  request: <T = any>(method: string, path: string, opts?: RequestOptions) => Promise<Response<T>>
  /** A client bound to one tenant and role set. */
  as: (tenant: string, roles: string[], sub?: string) => Client
  /** The last error the app logged (its message and code), when the test did not pass its own logger. */
  lastLoggedError: () => string | undefined
  close: () => Promise<void>
}

export interface Client {
  token: string
  get: <T = any>(path: string, headers?: Record<string, string>) => Promise<Response<T>>
  post: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response<T>>
  patch: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response<T>>
  put: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response<T>>
  delete: <T = any>(path: string, headers?: Record<string, string>) => Promise<Response<T>>
}

export interface ServerOptions {
  /** true: an ioredis client on REDIS_URL (default redis://127.0.0.1:6379), ready before the first request. */
  redis?: boolean
  /** The app's logger (default: silent); tests capture log lines through createLogger's stream. */
  log?: Logger
  /** true: the app sends jobs through a real pg-boss on the test database (default: no job sender). */
  jobs?: boolean
}

/**
 * A logger at level error that prints as silentLog does and keeps the last error's message and
 * code: a test's failure message can then say why the server answered 500 (CI shows the message,
 * not always the log lines around it).
 */
function errorRecorder (): { log: Logger, last: () => string | undefined } {
  let last: string | undefined
  const stream = new Writable({
    write (chunk: Buffer, _enc, done) {
      process.stdout.write(chunk)
      try {
        const line = JSON.parse(chunk.toString()) as { msg?: string, err?: { message?: string, code?: string, stack?: string } }
        last = `${line.msg ?? ''}: ${line.err?.code ?? ''} ${line.err?.message ?? ''} ${(line.err?.stack ?? '').split('\n').slice(1, 4).join(' ')}`.trim()
      } catch { last = chunk.toString().slice(0, 500) }
      done()
    }
  })
  return { log: createLogger('test', 'error', stream), last: () => last }
}

/** The real app on a real socket (127.0.0.1, random port) over the real test database. */
export async function startServer (env: Record<string, string> = {}, opts: ServerOptions = {}): Promise<TestServer> {
  const config = testConfig(env)
  const databaseUrl = config.databaseUrl ?? TEST_DATABASE_URL
  const redis = opts.redis === true ? await connectRedis(config.redisUrl ?? 'redis://127.0.0.1:6379') : null
  const db = createDb(databaseUrl, { poolMax: 30, statementTimeoutMs: config.dbStatementTimeoutMs })
  const sequencer = new Sequencer(db, () => {})
  const boss = opts.jobs === true ? await startBoss(databaseUrl) : null
  const feed = await startSettingsFeed(db, databaseUrl, silentLog)
  const logged = errorRecorder()
  const app = createApp({ config, db, log: opts.log ?? logged.log, sequencer, jobs: boss ? pgBossSender(boss) : null, redis, hooks: wireModules() })
  // As server/main.ts: the dry run's threads are up before the first request.
  await warmEvaluation(config.evaluationThreads)
  const server = http.createServer(app.callback())
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const { request, as } = clientOf(base, logged.last)

  return {
    base, routes: app.routes.map(r => r.spec), db, config, sequencer, request, as, lastLoggedError: logged.last,
    async close () {
      app.close()
      await new Promise<void>(resolve => server.close(() => resolve()))
      await sequencer.stop()
      await boss?.stop({ graceful: false })
      await feed.stop()
      await db.destroy()
      await redis?.quit()
    }
  }
}

/** Requests to an API at `base` (a TestServer's, or an API process's), and clients bound to a tenant and roles. */
export function clientOf (base: string, lastLoggedError: () => string | undefined = () => undefined): { request: TestServer['request'], as: TestServer['as'] } {
  async function request<T> (method: string, path: string, opts: RequestOptions = {}): Promise<Response<T>> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) }
    if (opts.token !== undefined) headers.Authorization = `Bearer ${opts.token}`
    let body: string | undefined
    if (opts.raw !== undefined) body = opts.raw
    else if (opts.body !== undefined) { body = JSON.stringify(opts.body); headers['Content-Type'] ??= 'application/json' }
    const res = await fetch(base + path, { method, headers, body })
    const text = await res.text()
    let parsed: unknown = text
    try { parsed = text === '' ? null : JSON.parse(text) } catch { /* not JSON */ }
    return { status: res.status, headers: res.headers, body: parsed as T, text, logged: res.status >= 500 ? lastLoggedError() : undefined }
  }

  function as (tenant: string, roles: string[], sub = 'user-1'): Client {
    const t = token({ tenant, roles, sub })
    return {
      token: t,
      get: (p, h) => request('GET', p, { token: t, headers: h }),
      post: (p, b, h) => request('POST', p, { token: t, body: b, headers: h }),
      patch: (p, b, h) => request('PATCH', p, { token: t, body: b, headers: h }),
      put: (p, b, h) => request('PUT', p, { token: t, body: b, headers: h }),
      delete: (p, h) => request('DELETE', p, { token: t, headers: h })
    }
  }

  return { request, as }
}

/** A sending-only pg-boss (no maintenance, no schedules) with every queue of lib/queues/contracts.ts. */
async function startBoss (databaseUrl: string): Promise<PgBoss> {
  const boss = new PgBoss({ connectionString: databaseUrl, schema: 'pgboss', supervise: false, schedule: false, migrate: false, max: 3 })
  boss.on('error', () => { /* a test asserts on outcomes, not on pg-boss's log */ })
  await boss.start()
  await createQueues(boss)
  return boss
}

async function connectRedis (url: string): Promise<Redis> {
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true })
  redis.on('error', () => { /* a failed connect rejects connect() below */ })
  await redis.connect()
  return redis
}

/** A lib-level context for integration tests that call lib directly. */
export function serviceContext (db: Db, tenantId: string, roles: string[] = ['owner'], env: Record<string, string> = {}): ServiceContext {
  return {
    tenantId,
    actor: { sub: 'tester', roles },
    scope: null,
    permissions: computePermissions(roles, null),
    requestId: randomUUID(),
    log: silentLog,
    db,
    config: testConfig(env),
    jobs: null,
    sequencer: null,
    hooks: wireModules()
  }
}

/** Creates and publishes an object type through the API; returns its id. */
export async function publishedType (c: Client, body: Record<string, unknown> = {}): Promise<string> {
  const res = await c.post('/v1/object-types', {
    key: `type_${randomUUID().slice(0, 8)}`,
    name: 'Test type',
    attributeSchema: { type: 'object', properties: { name: { type: 'string' }, height: { type: 'number' } } },
    ...body
  })
  if (res.status !== 201) throw new Error(`create type: ${res.status} ${res.text}`)
  const pub = await c.post(`/v1/object-types/${res.body.id}/publish`, { to: 'published' })
  if (pub.status !== 200) throw new Error(`publish type: ${pub.status} ${pub.text}`)
  return res.body.id
}

export async function flushAudit (db: Db, tenant: string): Promise<void> {
  await sequencePending(db, tenant)
}

export interface OwnerSessionOptions {
  /** Passed to startServer. */
  env?: Record<string, string>
  /** The prefix given to newTenant (default its own). */
  tenantPrefix?: string
  /** The owner's token subject (default that of TestServer.as). */
  sub?: string
  /** Publish a type as the owner: true for publishedType's default, or the body fields to override. */
  type?: Record<string, unknown> | true
}

export interface OwnerSession {
  s: TestServer
  tenant: string
  owner: Client
  /** Only with the `type` option. */
  typeId: string
}

/**
 * For one describe block: registers a before hook that starts a server, makes a fresh tenant and a client with the
 * owner role in it, and optionally publishes a type; and an after hook that closes the server. Call it in the describe
 * callback; read the fields only inside tests and hooks (before() fills them). A block's own before() registered
 * after this call runs after it, so it may build on these fields.
 */
export function useOwnerSession (opts: OwnerSessionOptions = {}): OwnerSession {
  let filled: OwnerSession | undefined
  before(async () => {
    const s = await startServer(opts.env)
    const tenant = newTenant(opts.tenantPrefix)
    const owner = s.as(tenant, ['owner'], opts.sub)
    filled = { s, tenant, owner, typeId: '' }
    if (opts.type !== undefined) filled.typeId = await publishedType(owner, opts.type === true ? {} : opts.type)
  })
  after(() => filled?.s.close())
  const read = <K extends keyof OwnerSession>(k: K): OwnerSession[K] => {
    if (filled === undefined) throw new Error(`useOwnerSession: ${k} read before the before() hook ran`)
    if (k === 'typeId' && opts.type === undefined) throw new Error('useOwnerSession: typeId needs the type option')
    return filled[k]
  }
  return {
    get s () { return read('s') },
    get tenant () { return read('tenant') },
    get owner () { return read('owner') },
    get typeId () { return read('typeId') }
  }
}
