import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import jwt from 'jsonwebtoken'
import pg from 'pg'
import { startServer, newTenant, publishedType, testConfig, token, type TestServer } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { createLogger } from '../../lib/log.js'
import { createDb } from '../../lib/db.js'
import { STATEMENT_KINDS } from '../../lib/statement-kind.js'
import { recordRelease, packageVersion } from '../../lib/release/index.js'
import { migrateLatest } from '../../db/knex.js'

/** A logger whose JSON lines land in `lines`, at the level LOG_LEVEL gives (as main.ts builds it). */
function capturingLogger (logLevel: string) {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { lines.push(String(chunk)); cb() } })
  const log = createLogger('api', testConfig({ LOG_LEVEL: logLevel }).logLevel, stream)
  return { log, lines, records: () => lines.map(l => JSON.parse(l) as Record<string, unknown>) }
}

/** A database of our own, created and dropped by the test (never the shared test database). */
async function throwawayDatabase (): Promise<{ url: string, drop: () => Promise<void> }> {
  const name = `spatial_test_platform_tmp_${randomBytes(4).toString('hex')}`
  const adminUrl = Object.assign(new URL(TEST_DATABASE_URL), { pathname: '/postgres' }).toString()
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE "${name}"`)
  await admin.end()
  const url = Object.assign(new URL(TEST_DATABASE_URL), { pathname: `/${name}` }).toString()
  return {
    url,
    async drop () {
      const c = new pg.Client({ connectionString: adminUrl })
      await c.connect()
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
      await c.end()
    }
  }
}

describe('X-Request-Id', () => {
  let s: TestServer
  before(async () => { s = await startServer() })
  after(() => s.close())

  it('is on every response: success, 401, 404, 405, health, metrics', async () => {
    const c = s.as(newTenant('rid'), ['viewer'])
    const responses = [
      await c.get('/v1/auth/me'), await s.request('GET', '/v1/auth/me'), await c.get('/v1/nope'),
      await c.delete('/v1/objects'), await s.request('GET', '/v1/health/live'), await s.request('GET', '/metrics')
    ]
    const ids = responses.map(r => r.headers.get('x-request-id'))
    for (const id of ids) assert.match(id ?? '', /^[A-Za-z0-9._-]{1,128}$/)
    assert.equal(new Set(ids).size, ids.length, 'each request gets its own id')
  })

  it('echoes a safe client id (up to 128 of A-Za-z0-9._-)', async () => {
    for (const id of ['abc-123', 'A.b_c-9', 'x'.repeat(128)]) {
      const res = await s.request('GET', '/v1/health/live', { headers: { 'X-Request-Id': id } })
      assert.equal(res.headers.get('x-request-id'), id)
    }
  })

  it('replaces an unsafe or too long client id with a fresh one', async () => {
    for (const id of ['x'.repeat(129), 'has space', 'a/b', 'semi;colon', '"quoted"', 'a%20b', 'x\u00e9']) {
      const res = await s.request('GET', '/v1/health/live', { headers: { 'X-Request-Id': id } })
      const got = res.headers.get('x-request-id') ?? ''
      assert.notEqual(got, id)
      assert.match(got, /^[A-Za-z0-9._-]{1,128}$/)
    }
  })
})

describe('request logs', () => {
  it('writes one bunyan JSON line per request with requestId, method, route, status and ms', async () => {
    const cap = capturingLogger('info')
    const s = await startServer({}, { log: cap.log })
    try {
      const owner = s.as(newTenant('log'), ['owner'])
      const typeId = await publishedType(owner)
      const created = await owner.post('/v1/objects', { typeId, attributes: { name: 'logged' } })
      cap.lines.length = 0
      const got = await s.request('GET', `/v1/objects/${created.body.id}`, { token: owner.token, headers: { 'X-Request-Id': 'trace-me-1' } })
      assert.equal(got.status, 200)
      const recs = cap.records()
      assert.equal(recs.length, 1, cap.lines.join(''))
      const line = recs[0]
      assert.equal(line.requestId, 'trace-me-1')
      assert.equal(line.method, 'GET')
      assert.equal(line.route, '/v1/objects/:id', 'the route template, not the concrete path')
      assert.equal(line.status, 200)
      assert.equal(typeof line.ms, 'number')
      assert.ok((line.ms as number) >= 0)
      assert.equal(line.level, 30)
      assert.equal(line.name, 'api')
      assert.equal(typeof line.time, 'string')
    } finally {
      await s.close()
    }
  })

  it('honours LOG_LEVEL: at error, a successful request writes nothing', async () => {
    const cap = capturingLogger('error')
    const s = await startServer({}, { log: cap.log })
    try {
      assert.equal((await s.request('GET', '/v1/health/live')).status, 200)
      assert.equal((await s.request('GET', '/v1/auth/me')).status, 401)
      assert.deepEqual(cap.lines, [])
    } finally {
      await s.close()
    }
  })

  it('never logs the Authorization header or a token', async () => {
    const cap = capturingLogger('debug')
    const s = await startServer({}, { log: cap.log })
    try {
      const tenant = newTenant('log')
      const good = token({ tenant, roles: ['owner'] })
      const expired = token({ tenant, roles: ['owner'], exp: Math.floor(Date.now() / 1000) - 60 })
      const forged = token({ tenant, roles: ['owner'] }, { secret: 'forged-secret-forged-secret-forged-secret' })
      for (const t of [good, expired, forged]) await s.request('GET', '/v1/auth/me', { token: t })
      await s.request('POST', '/v1/objects', { token: good, body: { typeId: 'x', token: good } })
      await s.request('GET', `/v1/objects?token=${good}`, { token: good })
      assert.ok(cap.lines.length >= 5)
      const all = cap.lines.join('')
      for (const t of [good, expired, forged]) {
        assert.ok(!all.includes(t), 'a token was logged')
        assert.ok(!all.includes(t.split('.')[2]), 'a token signature was logged')
      }
      assert.doesNotMatch(all, /authorization/i)
      assert.doesNotMatch(all, /bearer/i)
    } finally {
      await s.close()
    }
  })
})

describe('GET /metrics', () => {
  it('exposes the HTTP and database metrics with method/route/status labels after traffic', async () => {
    const s = await startServer()
    try {
      const c = s.as(newTenant('met'), ['viewer'])
      assert.equal((await c.get('/v1/objects')).status, 200)
      assert.equal((await c.get('/v1/no/such/path-1234')).status, 404)
      const res = await s.request('GET', '/metrics')
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/)
      const text = res.text
      const sample = (name: string, labels: Record<string, string>) => text.split('\n').find(l => {
        if (!l.startsWith(name + '{')) return false
        return Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`))
      })
      const counted = sample('http_requests_total', { method: 'GET', route: '/v1/objects', status: '200' })
      assert.ok(counted, 'http_requests_total for GET /v1/objects 200')
      assert.ok(Number(counted.split(' ').at(-1)) >= 1)
      assert.ok(sample('http_request_duration_seconds_bucket', { method: 'GET', route: '/v1/objects', status: '200', le: '+Inf' }))
      assert.ok(sample('http_request_duration_seconds_count', { method: 'GET', route: '/v1/objects', status: '200' }))
      const db = sample('database_query_duration_seconds_count', { operation: 'select' })
      assert.ok(db && Number(db.split(' ').at(-1)) >= 1, 'database_query_duration_seconds for selects')
      // An unknown path is not a label value (bounded cardinality).
      assert.ok(!text.includes('path-1234'))
      assert.ok(sample('http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }))
      for (const name of ['http_requests_total', 'license_limit_exceeded_total', 'workflow_transitions_total', 'automation_rules_executed_total']) {
        assert.match(text, new RegExp(`^# TYPE ${name} counter$`, 'm'))
      }
      for (const name of ['http_request_duration_seconds', 'database_query_duration_seconds']) {
        assert.match(text, new RegExp(`^# TYPE ${name} histogram$`, 'm'))
      }
    } finally {
      await s.close()
    }
  })

  it('labels database_query_duration_seconds with a small fixed set of statement kinds, whatever the statements', async () => {
    const s = await startServer()
    try {
      const c = s.as(newTenant('met'), ['owner'])
      const typeId = await publishedType(c)
      const [a, b] = [await c.post('/v1/objects', { typeId, attributes: {} }), await c.post('/v1/objects', { typeId, attributes: {} })]
      assert.equal((await c.post('/v1/objects/batch', { items: [{ typeId, attributes: { n: 1 } }, { typeId, attributes: { n: 2 } }] })).status, 201)
      assert.equal((await c.patch(`/v1/objects/${a.body.id}`, { attributes: { n: 1 } }, { 'If-Match': '1' })).status, 200)
      const rel = await c.post('/v1/relations', { fromObjectId: a.body.id, toObjectId: b.body.id, relationType: 'feeds', metadata: { k: 1 } })
      assert.equal(rel.status, 201, rel.text)
      assert.equal((await c.get('/v1/relations?metadata.k=1')).status, 200)
      assert.equal((await c.post('/v1/queries/objects/run', { graph: { objectIds: [a.body.id], maxDepth: 2 } })).status, 200)
      assert.equal((await c.delete(`/v1/objects/${b.body.id}`)).status, 204)
      assert.equal((await c.put('/v1/permissions/policy', { roles: {} })).status, 200)
      assert.equal((await c.get(`/v1/objects/${a.body.id}/history`)).status, 200)
      const text = (await s.request('GET', '/metrics')).text
      const labels = new Set([...text.matchAll(/^database_query_duration_seconds_count\{operation="([^"]*)"\}/gm)].map(m => m[1]))
      for (const kind of ['select', 'insert', 'update']) assert.ok(labels.has(kind), `${kind} in ${[...labels].join(', ')}`)
      for (const label of labels) assert.ok((STATEMENT_KINDS as readonly string[]).includes(label), `operation="${label}" is not a statement kind`)
    } finally {
      await s.close()
    }
  })

  it('needs Bearer METRICS_TOKEN when it is set', async () => {
    const secret = 'metrics-secret-0123456789'
    const s = await startServer({ METRICS_TOKEN: secret })
    try {
      for (const res of [
        await s.request('GET', '/metrics'),
        await s.request('GET', '/metrics', { token: 'metrics-secret-wrong-6789' }),
        await s.request('GET', '/metrics', { token: secret + 'x' }),
        await s.request('GET', '/metrics', { token: s.as(newTenant('met'), ['owner']).token })
      ]) {
        assert.equal(res.status, 401, res.text)
        assert.equal(res.body.error.code, 'UNAUTHORIZED')
      }
      const ok = await s.request('GET', '/metrics', { token: secret })
      assert.equal(ok.status, 200)
      assert.match(ok.text, /http_requests_total/)
    } finally {
      await s.close()
    }
  })
})

describe('health', () => {
  it('GET /v1/health/live answers 200 {status:"ok"} without a token', async () => {
    const s = await startServer()
    try {
      const res = await s.request('GET', '/v1/health/live')
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, { status: 'ok' })
    } finally {
      await s.close()
    }
  })

  it('GET /v1/health/ready answers 200 with the database, license and release checks', async () => {
    const s = await startServer()
    try {
      const res = await s.request('GET', '/v1/health/ready')
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.status, 'ok')
      assert.equal(res.body.checks.database, 'ok')
      assert.equal(res.body.checks.license, 'valid')
      assert.equal(res.body.checks.release, 'ok')
    } finally {
      await s.close()
    }
  })

  it('ready answers 503 {status:"error", checks} when the database is unreachable; live stays 200', async () => {
    const s = await startServer({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' })
    try {
      const res = await s.request('GET', '/v1/health/ready')
      assert.equal(res.status, 503, res.text)
      assert.equal(res.body.status, 'error')
      assert.notEqual(res.body.checks.database, 'ok')
      assert.equal(typeof res.body.checks.license, 'string')
      assert.equal((await s.request('GET', '/v1/health/live')).status, 200)
    } finally {
      await s.close()
    }
  })

  it('migrates a database the other build migrated: names recorded as .js (dist/) or .ts (sources) are the same migrations', async () => {
    const tmp = await throwawayDatabase()
    const db = createDb(tmp.url, { poolMax: 2 })
    try {
      const applied = await migrateLatest(db)
      assert.ok(applied.length > 10 && applied.every(n => n.endsWith('.ts')), JSON.stringify(applied))
      // As the compiled release (node dist/db/setup.js) would have recorded them.
      await db.raw("UPDATE knex_migrations SET name = regexp_replace(name, '\\.ts$', '.js')")
      assert.deepEqual(await migrateLatest(db), [], 'nothing runs again')
      const names = (await db.raw('SELECT name FROM knex_migrations ORDER BY id')).rows.map((r: { name: string }) => r.name)
      assert.deepEqual(names, applied)
    } finally {
      await db.destroy()
      await tmp.drop()
    }
  })

  it('ready answers 503 until the setup job recorded this release, and when the recorded release differs', async () => {
    const tmp = await throwawayDatabase()
    try {
      const db = createDb(tmp.url, { poolMax: 2 })
      const s = await startServer({ DATABASE_URL: tmp.url })
      try {
        const fresh = await s.request('GET', '/v1/health/ready')
        assert.equal(fresh.status, 503, 'reachable but never set up')
        assert.deepEqual(fresh.body.checks, { database: 'ok', license: 'valid', release: 'not_recorded' })
        await migrateLatest(db)
        await recordRelease(db, packageVersion())
        assert.equal((await s.request('GET', '/v1/health/ready')).status, 200, 'ready at our own release')
        await db.raw("INSERT INTO releases (version, applied_at) VALUES ('99.0.0', now() + interval '1 minute')")
        const res = await s.request('GET', '/v1/health/ready')
        assert.equal(res.status, 503, res.text)
        assert.equal(res.body.status, 'error')
        assert.equal(res.body.checks.database, 'ok')
        assert.match(res.body.checks.release, /99\.0\.0/)
      } finally {
        await s.close()
        await db.destroy()
      }
    } finally {
      await tmp.drop()
    }
  })

  describe('license check', () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const PEM = publicKey.export({ type: 'spki', format: 'pem' }).toString()
    const license = (exp: number) => jwt.sign({ edition: 'test', features: {}, limits: {}, metadata: {}, exp }, privateKey, { algorithm: 'RS256' })
    const ready = async (env: Record<string, string>) => {
      const s = await startServer(env)
      try { return await s.request('GET', '/v1/health/ready') } finally { await s.close() }
    }

    it('is "valid" with a verified license', async () => {
      const res = await ready({ LICENSE_PUBLIC_KEY: PEM, LICENSE_KEY: license(Math.floor(Date.now() / 1000) + 400 * 86400) })
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.checks.license, 'valid')
    })

    it('keeps readiness at 200 with "expired" for an expired license', async () => {
      const res = await ready({ LICENSE_PUBLIC_KEY: PEM, LICENSE_KEY: license(Math.floor(Date.now() / 1000) - 60) })
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.checks.license, 'expired')
    })

    it('answers 503 when the configured license cannot be verified', async () => {
      const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
      const forged = jwt.sign({ edition: 'forged', exp: Math.floor(Date.now() / 1000) + 86400 }, other, { algorithm: 'RS256' })
      const res = await ready({ LICENSE_PUBLIC_KEY: PEM, LICENSE_KEY: forged })
      assert.equal(res.status, 503, res.text)
      assert.equal(res.body.status, 'error')
      assert.equal(res.body.checks.database, 'ok')
      assert.notEqual(res.body.checks.license, 'valid')
    })
  })
})
