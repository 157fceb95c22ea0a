import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { startServer, newTenant, token, type Response, type TestServer } from '../support/harness.js'

// docs/behaviour.md "Platform": per (tenant, sub) when authenticated, else per client address; Redis when
// configured, else in process; 429 RATE_LIMITED with Retry-After and RateLimit-*; health and
// metrics never limited.

const LIMIT = '3'

function assertLimited (res: Response): void {
  assert.equal(res.status, 429, res.text)
  assert.equal(res.body.error.code, 'RATE_LIMITED')
  assert.equal(typeof res.body.error.message, 'string')
  const retry = res.headers.get('retry-after')
  assert.match(retry ?? '', /^\d+$/, `Retry-After must be whole seconds, got ${retry}`)
  assert.ok(Number(retry) >= 1)
  assert.equal(res.headers.get('ratelimit-limit'), LIMIT)
  assert.equal(res.headers.get('ratelimit-remaining'), '0')
  assert.match(res.headers.get('ratelimit-reset') ?? '', /^\d+$/)
}

/** A GET from a chosen loopback source address (127.0.0.0/8 all reach a 127.0.0.1 listener on Linux). */
function getFrom (base: string, path: string, localAddress: string): Promise<number> {
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path, method: 'GET', localAddress, agent: false }, res => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('rate limiting (in process)', () => {
  const servers: TestServer[] = []
  const start = async (env: Record<string, string> = {}) => {
    const s = await startServer({ RATE_LIMIT_LIMIT: LIMIT, ...env })
    servers.push(s)
    return s
  }
  after(async () => { for (const s of servers) await s.close() })

  it('answers the 4th request of one (tenant, sub) in the window with 429, Retry-After and RateLimit-*', async () => {
    const s = await start()
    const c = s.as(newTenant('rl'), ['viewer'])
    for (let i = 0; i < 3; i++) {
      const ok = await c.get('/v1/auth/me')
      assert.equal(ok.status, 200, `request ${i + 1}: ${ok.text}`)
      assert.equal(ok.headers.get('ratelimit-limit'), LIMIT)
      assert.equal(ok.headers.get('ratelimit-remaining'), String(2 - i))
    }
    const limited = await c.get('/v1/auth/me')
    assertLimited(limited)
    assert.ok(limited.headers.get('x-request-id'))
    // Every endpoint counts toward the same budget.
    assertLimited(await c.get('/v1/objects'))
  })

  it('counts another sub and another tenant separately', async () => {
    const s = await start()
    const tenant = newTenant('rl')
    const alice = s.as(tenant, ['viewer'], 'alice')
    for (let i = 0; i < 3; i++) assert.equal((await alice.get('/v1/auth/me')).status, 200)
    assertLimited(await alice.get('/v1/auth/me'))
    assert.equal((await s.as(tenant, ['viewer'], 'bob').get('/v1/auth/me')).status, 200, 'another sub')
    assert.equal((await s.as(newTenant('rl'), ['viewer'], 'alice').get('/v1/auth/me')).status, 200, 'another tenant')
  })

  it('counts unauthenticated requests (failed logins included) per client address', async () => {
    const s = await start()
    for (let i = 0; i < 3; i++) assert.equal((await s.request('GET', '/v1/auth/me', { token: 'garbage' })).status, 401)
    assertLimited(await s.request('GET', '/v1/auth/me'))
    assertLimited(await s.request('GET', '/openapi/v1.json'))
    // Another client address still has its budget; an authenticated caller on this address too.
    assert.equal(await getFrom(s.base, '/openapi/v1.json', '127.0.0.2'), 200)
    assert.equal((await s.as(newTenant('rl'), ['viewer']).get('/v1/auth/me')).status, 200)
  })

  it('never limits /v1/health/* and /metrics, nor counts them', async () => {
    const s = await start()
    for (let i = 0; i < 8; i++) {
      for (const path of ['/v1/health/live', '/v1/health/ready', '/metrics']) {
        const res = await s.request('GET', path)
        assert.equal(res.status, 200, `${path} #${i + 1}: ${res.text}`)
        assert.equal(res.headers.get('ratelimit-limit'), null)
      }
    }
    // The address's budget is untouched by those 24 requests.
    const open = await s.request('GET', '/openapi/v1.json')
    assert.equal(open.status, 200)
    assert.equal(open.headers.get('ratelimit-remaining'), '2')
  })

  it('allows requests again once the window has passed', async () => {
    const s = await start({ RATE_LIMIT_TTL: '1' })
    const c = s.as(newTenant('rl'), ['viewer'])
    for (let i = 0; i < 3; i++) await c.get('/v1/auth/me')
    const limited = await c.get('/v1/auth/me')
    assertLimited(limited)
    assert.equal(limited.headers.get('retry-after'), '1')
    const deadline = Date.now() + 5000
    let status = 429
    while (status === 429 && Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 100))
      status = (await c.get('/v1/auth/me')).status
    }
    assert.equal(status, 200)
  })
})

describe('rate limiting in Redis (REDIS_URL)', () => {
  const servers: TestServer[] = []
  after(async () => { for (const s of servers) await s.close() })
  const env = { RATE_LIMIT_LIMIT: LIMIT, REDIS_URL: 'redis://127.0.0.1:6379' }

  it('shares one count between two API instances', async () => {
    const a = await startServer(env, { redis: true })
    servers.push(a)
    const b = await startServer(env, { redis: true })
    servers.push(b)
    const tenant = newTenant('rlr')
    const t = token({ tenant, roles: ['viewer'], sub: 'shared' })
    assert.equal((await a.request('GET', '/v1/auth/me', { token: t })).status, 200)
    assert.equal((await b.request('GET', '/v1/auth/me', { token: t })).status, 200)
    const third = await a.request('GET', '/v1/auth/me', { token: t })
    assert.equal(third.status, 200)
    assert.equal(third.headers.get('ratelimit-remaining'), '0')
    assertLimited(await b.request('GET', '/v1/auth/me', { token: t }))
    assertLimited(await a.request('GET', '/v1/auth/me', { token: t }))
    // Separate keys stay separate in Redis too.
    assert.equal((await b.request('GET', '/v1/auth/me', { token: token({ tenant, roles: ['viewer'], sub: 'other' }) })).status, 200)
  })

  it('still never limits health and metrics', async () => {
    const a = await startServer(env, { redis: true })
    servers.push(a)
    for (let i = 0; i < 5; i++) {
      assert.equal((await a.request('GET', '/v1/health/live')).status, 200)
      assert.equal((await a.request('GET', '/metrics')).status, 200)
    }
  })
})
