import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { token, useOwnerSession } from '../support/harness.js'

// Tile requests on the edge (server/http/edge.ts). Every test here goes through app.callback()
// as the API does, so the plain tile URL takes the edge; the same URL with its first segment in
// capitals is not the edge's and takes Koa's router to the same route, which is the reference.

const TILE = '/v1/layers/tiles/hits/6/33/22.mvt' // holds 8.5,47.4 and 8.6,47.5

describe('tile requests on the edge and through Koa', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'hits', type: true, env: { RATE_LIMIT_LIMIT: '1000' } })
  const get = (path: string, t: string, headers: Record<string, string> = {}) =>
    fetch(ctx.s.base + path, { headers: { Authorization: `Bearer ${t}`, ...headers } })
  const point = (lon: number, lat: number, name: string) =>
    ctx.owner.post('/v1/objects', { typeId: ctx.typeId, attributes: { name }, geometry: { type: 'Point', coordinates: [lon, lat] } })

  before(async () => {
    assert.equal((await ctx.owner.post('/v1/layers/definitions', { name: 'Hits', slug: 'hits', cacheTtlSeconds: 300, definition: { filters: { typeId: ctx.typeId }, fields: ['attributes.name'] } })).status, 201)
    assert.equal((await point(8.5, 47.4, 'first')).status, 201)
  })

  it('answers as the Koa route does: same body, validators and headers; 304 on If-None-Match', async () => {
    const fast = await get(TILE, ctx.owner.token)
    const koa = await get(TILE.replace('/v1/', '/V1/'), ctx.owner.token)
    assert.equal(fast.status, 200)
    assert.equal(koa.status, 200)
    const [a, b] = [Buffer.from(await fast.arrayBuffer()), Buffer.from(await koa.arrayBuffer())]
    assert.ok(a.length > 0 && a.equals(b))
    for (const h of ['etag', 'cache-control', 'vary', 'content-type', 'content-encoding', 'content-length', 'ratelimit-limit']) {
      assert.equal(fast.headers.get(h), koa.headers.get(h), h)
    }
    assert.equal(fast.headers.get('cache-control'), 'private, max-age=300')
    assert.match(fast.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/)
    assert.equal((await get(TILE, ctx.owner.token, { 'X-Request-Id': 'map-view-1' })).headers.get('x-request-id'), 'map-view-1')
    const again = await get(TILE, ctx.owner.token, { 'If-None-Match': fast.headers.get('etag')! })
    assert.equal(again.status, 304)
    assert.equal(again.headers.get('etag'), fast.headers.get('etag'))
    assert.equal((await again.arrayBuffer()).byteLength, 0)
  })

  it('serves the current version: an object write changes the ETag and the cached tile', async () => {
    const before = await get(TILE, ctx.owner.token)
    const etag = before.headers.get('etag')!
    const bytes = Buffer.from(await before.arrayBuffer())
    assert.equal((await get(TILE, ctx.owner.token, { 'If-None-Match': etag })).status, 304)
    assert.equal((await point(8.6, 47.5, 'second')).status, 201)
    const after = await get(TILE, ctx.owner.token, { 'If-None-Match': etag })
    assert.equal(after.status, 200)
    assert.notEqual(after.headers.get('etag'), etag)
    const now = Buffer.from(await after.arrayBuffer())
    assert.ok(now.length > bytes.length)
    assert.ok(now.includes(Buffer.from('second')))
    // A layer change invalidates too (its version is in the key).
    assert.equal((await ctx.owner.patch('/v1/layers/definitions/hits', { cacheTtlSeconds: 60 })).status, 200)
    const patched = await get(TILE, ctx.owner.token)
    assert.notEqual(patched.headers.get('etag'), after.headers.get('etag'))
    assert.equal(patched.headers.get('cache-control'), 'private, max-age=60')
  })

  it('keeps tenants apart: another tenant with a layer of the same slug gets its own tile', async () => {
    const other = ctx.s.as(`${ctx.tenant}-other`, ['owner'])
    assert.equal((await get(TILE, other.token)).status, 404)
    assert.equal((await other.post('/v1/layers/definitions', { name: 'Hits', slug: 'hits', cacheTtlSeconds: 300 })).status, 201)
    const theirs = await get(TILE, other.token)
    assert.equal(theirs.status, 200)
    assert.equal((await theirs.arrayBuffer()).byteLength, 0)
    assert.notEqual(theirs.headers.get('etag'), (await get(TILE, ctx.owner.token)).headers.get('etag'))
  })

  it('never serves a token past its expiry, though verified tokens are kept', async () => {
    // exp is whole seconds (iat + 1): signed just before a second ends, the token would expire
    // before the second request (as it once did in CI), so it is signed just after one begins.
    await new Promise(resolve => setTimeout(resolve, 1000 - Date.now() % 1000 + 20))
    const shortLived = token({ tenant: ctx.tenant, roles: ['owner'], sub: 'short' }, { expiresIn: 1 })
    assert.equal((await get(TILE, shortLived)).status, 200)
    assert.equal((await get(TILE, shortLived)).status, 200)
    await new Promise(resolve => setTimeout(resolve, 1100 + 1000 - Date.now() % 1000))
    const expired = await get(TILE, shortLived)
    assert.equal(expired.status, 401)
    assert.equal(((await expired.json()) as { error: { details: { reason: string } } }).error.details.reason, 'token expired')
    const forged = token({ tenant: ctx.tenant, roles: ['owner'] }, { secret: 'another-secret-that-is-at-least-32-characters' })
    assert.equal((await get(TILE, forged)).status, 401)
    assert.equal((await fetch(ctx.s.base + TILE)).status, 401)
  })

  it('refuses a caller without objects:read with 403, auditing the denial once', async () => {
    const denied = async () => Number((await ctx.s.db('audit_events').where({ tenant_id: ctx.tenant, type: 'permission.denied' }).count<Array<{ n: number }>>({ n: '*' }))[0].n)
    const n0 = await denied()
    const res = await get(TILE, ctx.s.as(ctx.tenant, [], 'nobody').token)
    assert.equal(res.status, 403)
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'FORBIDDEN')
    assert.equal(await denied(), n0 + 1)
  })

  it('leaves bad coordinates and unknown layers to the route (400, 404)', async () => {
    assert.equal((await get('/v1/layers/tiles/hits/6/64/0.mvt', ctx.owner.token)).status, 400)
    assert.equal((await get('/v1/layers/tiles/nope/6/33/22.mvt', ctx.owner.token)).status, 404)
  })

  it('counts the request in the metrics under the route template', async () => {
    const count = async () => {
      const text = await (await fetch(ctx.s.base + '/metrics')).text()
      const line = text.split('\n').find(l => l.startsWith('http_requests_total{') && l.includes('route="/v1/layers/tiles/:layer/:z/:x/:y"') && l.includes('status="200"'))
      return line === undefined ? 0 : Number(line.split(' ').at(-1))
    }
    const n0 = await count()
    assert.equal((await get(TILE, ctx.owner.token)).status, 200)
    assert.equal(await count(), n0 + 1)
  })
})

describe('tile requests on the edge: the rate limit', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'hitsrl', env: { RATE_LIMIT_LIMIT: '3' } })

  it('spends one point per request, on either path', async () => {
    const t = ctx.owner.token
    const get = (path: string) => fetch(ctx.s.base + path, { headers: { Authorization: `Bearer ${t}` } })
    assert.equal((await ctx.owner.post('/v1/layers/definitions', { name: 'Rl', slug: 'rl' })).status, 201) // point 1
    const a = await get('/v1/layers/tiles/rl/0/0/0') // the edge, point 2
    assert.equal(a.status, 200)
    assert.equal(a.headers.get('ratelimit-remaining'), '1')
    const b = await get('/v1/layers/tiles/unknown/0/0/0') // handed over (404), point 3, not 4
    assert.equal(b.status, 404)
    assert.equal(b.headers.get('ratelimit-remaining'), '0')
    const c = await get('/v1/layers/tiles/rl/0/0/0')
    assert.equal(c.status, 429)
    assert.ok(Number(c.headers.get('retry-after')) >= 1)
  })
})
