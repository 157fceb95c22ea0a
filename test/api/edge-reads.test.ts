import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { token, useOwnerSession } from '../support/harness.js'

// A get by id and a page of objects on the edge (server/http/edge.ts). Every test goes through
// app.callback() as the API does. The reference is the same route reached through Koa's router,
// by a request the edge does not take: the path's first segment in capitals (the router is
// case-insensitive) and the list path with a trailing slash (the router is not strict).

describe('object reads on the edge and through Koa', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'hot', type: true, env: { RATE_LIMIT_LIMIT: '1000' } })
  const get = (path: string, t: string, headers: Record<string, string> = {}) =>
    fetch(ctx.s.base + path, { headers: { Authorization: `Bearer ${t}`, ...headers } })
  let id = ''
  let createdAt = ''

  before(async () => {
    for (const [i, name] of ['first', 'second', 'third'].entries()) {
      const r = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, attributes: { name }, geometry: { type: 'Point', coordinates: [8.5 + i / 10, 47.4] } })
      assert.equal(r.status, 201)
      if (i === 0) { id = r.body.id; createdAt = r.body.createdAt }
    }
  })

  const sameAnswer = async (fast: Response, koa: Response) => {
    assert.equal(fast.status, 200)
    assert.equal(koa.status, 200)
    assert.equal(await fast.text(), await koa.text())
    for (const h of ['etag', 'content-type', 'content-length', 'ratelimit-limit']) assert.equal(fast.headers.get(h), koa.headers.get(h), h)
    assert.match(fast.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/)
  }

  it('a get by id answers as the Koa route does: same body, ETag and headers', async () => {
    const fast = await get(`/v1/objects/${id}`, ctx.owner.token)
    assert.equal(fast.headers.get('etag'), '"1"')
    const koa = await get(`/V1/objects/${id}`, ctx.owner.token)
    await sameAnswer(fast, koa)
    assert.equal((await get(`/v1/objects/${id}`, ctx.owner.token, { 'X-Request-Id': 'reader-1' })).headers.get('x-request-id'), 'reader-1')
    // asOf is a query of the same route: before the object existed it is 404 (from the route).
    await sameAnswer(await get(`/v1/objects/${id}?asOf=${createdAt}`, ctx.owner.token), await get(`/V1/objects/${id}?asOf=${createdAt}`, ctx.owner.token))
    assert.equal((await get(`/v1/objects/${id}?asOf=2000-01-01T00:00:00Z`, ctx.owner.token)).status, 404)
  })

  it('a page of objects answers as the Koa route does, for each sort and filter', async () => {
    for (const q of ['limit=2&sortBy=createdAt&sortOrder=desc', 'limit=2&offset=1', `typeId=${ctx.typeId}&sortBy=attributes.name`, 'limit=1&limit=3']) {
      const fast = await get(`/v1/objects?${q}`, ctx.owner.token)
      const koa = await get(`/v1/objects/?${q}`, ctx.owner.token)
      await sameAnswer(fast, koa)
    }
    const page = await (await get('/v1/objects?limit=1&limit=3', ctx.owner.token)).json() as { items: unknown[], pagination: { limit: number, total: number } }
    assert.equal(page.pagination.limit, 3) // the last of a repeated parameter, as the route reads it
    assert.equal(page.items.length, 3)
  })

  it('leaves what is not a plain success to the route: 400, 404', async () => {
    const bad = await get('/v1/objects?sortOrder=sideways', ctx.owner.token)
    assert.equal(bad.status, 400)
    assert.equal(((await bad.json()) as { error: { details: { field: string } } }).error.details.field, 'sortOrder')
    assert.equal((await get('/v1/objects?nope=1', ctx.owner.token)).status, 400)
    assert.equal((await get('/v1/objects/00000000-0000-4000-8000-000000000000', ctx.owner.token)).status, 404)
  })

  it('keeps tenants apart', async () => {
    const other = ctx.s.as(`${ctx.tenant}-other`, ['owner'])
    assert.equal((await get(`/v1/objects/${id}`, other.token)).status, 404)
    const page = await (await get('/v1/objects?limit=10', other.token)).json() as { items: unknown[], pagination: { total: number } }
    assert.equal(page.items.length, 0)
    assert.equal(page.pagination.total, 0)
  })

  it('never serves a bad, forged, expired or missing token', async () => {
    // exp is whole seconds (iat + 1): signed just before a second ends, the token would expire at
    // once, so it is signed just after one begins.
    await new Promise(resolve => setTimeout(resolve, 1000 - Date.now() % 1000 + 20))
    const shortLived = token({ tenant: ctx.tenant, roles: ['owner'], sub: 'short' }, { expiresIn: 1 })
    assert.equal((await get(`/v1/objects/${id}`, shortLived)).status, 200)
    await new Promise(resolve => setTimeout(resolve, 1100 + 1000 - Date.now() % 1000))
    assert.equal((await get(`/v1/objects/${id}`, shortLived)).status, 401)
    assert.equal((await get('/v1/objects', shortLived)).status, 401)
    const forged = token({ tenant: ctx.tenant, roles: ['owner'] }, { secret: 'another-secret-that-is-at-least-32-characters' })
    assert.equal((await get(`/v1/objects/${id}`, forged)).status, 401)
    assert.equal((await fetch(`${ctx.s.base}/v1/objects/${id}`)).status, 401)
  })

  it('refuses a caller without objects:read with 403, auditing the denial once', async () => {
    const denied = async () => Number((await ctx.s.db('audit_events').where({ tenant_id: ctx.tenant, type: 'permission.denied' }).count<Array<{ n: number }>>({ n: '*' }))[0].n)
    const n0 = await denied()
    const res = await get(`/v1/objects/${id}`, ctx.s.as(ctx.tenant, [], 'nobody').token)
    assert.equal(res.status, 403)
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'FORBIDDEN')
    assert.equal(await denied(), n0 + 1)
  })

  it('counts the request in the metrics under the route template', async () => {
    const count = async (route: string) => {
      const text = await (await fetch(ctx.s.base + '/metrics')).text()
      const line = text.split('\n').find(l => l.startsWith('http_requests_total{') && l.includes(`route="${route}"`) && l.includes('status="200"') && l.includes('method="GET"'))
      return line === undefined ? 0 : Number(line.split(' ').at(-1))
    }
    const [a0, b0] = [await count('/v1/objects/:id'), await count('/v1/objects')]
    assert.equal((await get(`/v1/objects/${id}`, ctx.owner.token)).status, 200)
    assert.equal((await get('/v1/objects?limit=1', ctx.owner.token)).status, 200)
    assert.equal(await count('/v1/objects/:id'), a0 + 1)
    assert.equal(await count('/v1/objects'), b0 + 1)
  })
})

describe('object reads on the edge: the rate limit', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'hotrl', env: { RATE_LIMIT_LIMIT: '3' } })

  it('spends one point per request, on either path', async () => {
    const get = (path: string) => fetch(ctx.s.base + path, { headers: { Authorization: `Bearer ${ctx.owner.token}` } })
    const a = await get('/v1/objects?limit=1') // the edge, point 1
    assert.equal(a.status, 200)
    assert.equal(a.headers.get('ratelimit-remaining'), '2')
    const b = await get('/v1/objects/00000000-0000-4000-8000-000000000000') // a 404, point 2
    assert.equal(b.status, 404)
    assert.equal(b.headers.get('ratelimit-remaining'), '1')
    assert.equal((await get('/v1/objects')).status, 200) // point 3
    const c = await get('/v1/objects?limit=1')
    assert.equal(c.status, 429)
    assert.ok(Number(c.headers.get('retry-after')) >= 1)
  })
})
