import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { gzipSync } from 'node:zlib'
import { token, useOwnerSession } from '../support/harness.js'

// POST /v1/objects on the edge (server/http/edge.ts). Every test goes through app.callback() as
// the API does. The reference is the same route reached through Koa's router, by a request the
// edge does not take: the path with a trailing slash (the router is not strict).

describe('the create on the edge and through Koa', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'hotw', type: true, env: { RATE_LIMIT_LIMIT: '1000', MAX_BODY_BYTES: '1500' } })
  const FAST = '/v1/objects'
  const KOA = '/v1/objects/'
  const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}, t = ctx.owner.token) =>
    fetch(ctx.s.base + path, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body), headers: { Authorization: `Bearer ${t}`, 'Content-Type': 'application/json', ...headers } })
  const body = (over: Record<string, unknown> = {}) => JSON.stringify({ typeId: ctx.typeId, attributes: { name: 'pole', height: 9 }, geometry: { type: 'Point', coordinates: [8.5, 47.4] }, ...over })

  // What the tenant holds: objects, versions, audit events, outbox events (a refused write adds none).
  const held = async () => {
    const n = async (table: string) => Number((await ctx.s.db(table).where({ tenant_id: ctx.tenant }).count<Array<{ n: number }>>({ n: '*' }))[0].n)
    return { objects: await n('objects'), versions: await n('object_versions'), audit: await n('audit_events'), outbox: await n('outbox_events') }
  }
  /** Both answers alike: status, body text, and the headers that do not name the new object. */
  const sameAnswer = async (fast: Response, koa: Response) => {
    assert.equal(fast.status, koa.status)
    assert.equal(await fast.text(), await koa.text())
    for (const h of ['content-type', 'content-length', 'ratelimit-limit', 'etag', 'retry-after']) assert.equal(fast.headers.get(h), koa.headers.get(h), h)
    assert.match(fast.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/)
  }
  const dropIds = (o: Record<string, unknown>) => { const { id: _id, publicId: _p, createdAt: _c, updatedAt: _u, validFrom: _v, ...rest } = o; return rest }

  it('a plain create answers as the Koa route does: 201, Location, ETag, the object', async () => {
    const h0 = await held()
    const fast = await post(FAST, body())
    const koa = await post(KOA, body())
    assert.equal(fast.status, 201)
    assert.equal(koa.status, 201)
    const [a, b] = [await fast.json() as Record<string, unknown>, await koa.json() as Record<string, unknown>]
    assert.deepEqual(dropIds(a), dropIds(b))
    assert.deepEqual(Object.keys(a), Object.keys(b))
    assert.equal(fast.headers.get('location'), `/v1/objects/${a.id}`)
    assert.equal(koa.headers.get('location'), `/v1/objects/${b.id}`)
    for (const h of ['content-type', 'etag', 'ratelimit-limit']) assert.equal(fast.headers.get(h), koa.headers.get(h), h)
    assert.equal(fast.headers.get('etag'), '"1"')
    assert.equal(Number(fast.headers.get('content-length')), Buffer.byteLength(JSON.stringify(a)))
    // Written as the route writes: object, first version, audit and outbox event, in the token's tenant.
    assert.deepEqual(await held(), { objects: h0.objects + 2, versions: h0.versions + 2, audit: h0.audit + 2, outbox: h0.outbox + 2 })
    const got = await ctx.owner.get(`/v1/objects/${a.id}`)
    assert.equal(got.status, 200)
    assert.deepEqual(got.body, a)
    assert.equal((await post(FAST, body(), { 'X-Request-Id': 'creator-1' })).headers.get('x-request-id'), 'creator-1')
  })

  it('answers the lib\'s refusals as the route does, and writes nothing', async () => {
    const refusals = [
      body({ attributes: { height: 'tall' } }), // the type's schema
      body({ typeId: '00000000-0000-4000-8000-000000000000' }), // no such type
      body({ geometry: { type: 'Point', coordinates: [8.5, 47.4, 400] } }), // 3D
      JSON.stringify({ attributes: {} }), // no typeId
      body({ extra: 1 }), // an unknown field
      '{}'
    ]
    const h0 = await held()
    for (const text of refusals) {
      const fast = await post(FAST, text)
      const koa = await post(KOA, text)
      assert.equal(fast.status, 400, text)
      await sameAnswer(fast, koa)
    }
    assert.deepEqual(await held(), h0)
  })

  it('leaves a body that is not plain JSON to the route\'s own parser, with the bytes it read', async () => {
    const h0 = await held()
    for (const text of ['{"typeId":', '[]', '"text"', '{"__proto__": {"x": 1}}', `{"typeId": "\\u0030"}`, '{} {}']) {
      const fast = await post(FAST, text)
      assert.equal(fast.status, 400, text)
      await sameAnswer(fast, await post(KOA, text))
    }
    assert.deepEqual(await held(), h0)
    // A BOM is dropped by the route's decoder: the create succeeds, answered by the route.
    const bom = await post(FAST, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body())]))
    assert.equal(bom.status, 201)
    assert.equal((await held()).objects, h0.objects + 1)
  })

  it('leaves requests whose headers are not plain to the route', async () => {
    const cases: Array<[string | Buffer, Record<string, string>, number]> = [
      [body(), { 'Content-Type': 'text/plain' }, 400],
      [gzipSync(body()), { 'Content-Encoding': 'gzip' }, 201],
      [body(), { 'Content-Type': 'application/merge-patch+json' }, 201], // every +json type is JSON
      ['x'.repeat(2000), {}, 413]
    ]
    for (const [b, headers, status] of cases) {
      const fast = await post(FAST, b, headers)
      assert.equal(fast.status, status, JSON.stringify(headers))
      if (status !== 201) await sameAnswer(fast, await post(KOA, b, headers))
    }
    assert.equal((await post(`${FAST}?x=1`, body())).status, 201)
  })

  it('never serves a bad, forged, expired or missing token: 401 from the route', async () => {
    const h0 = await held()
    const forged = token({ tenant: ctx.tenant, roles: ['owner'] }, { secret: 'another-secret-that-is-at-least-32-characters' })
    const fast = await post(FAST, body(), {}, forged)
    assert.equal(fast.status, 401)
    await sameAnswer(fast, await post(KOA, body(), {}, forged))
    assert.equal((await fetch(ctx.s.base + FAST, { method: 'POST', body: body(), headers: { 'Content-Type': 'application/json' } })).status, 401)
    assert.deepEqual((await held()).objects, h0.objects)
  })

  it('refuses a caller without objects:write with 403, auditing the denial once, writing nothing', async () => {
    const denied = async () => Number((await ctx.s.db('audit_events').where({ tenant_id: ctx.tenant, type: 'permission.denied' }).count<Array<{ n: number }>>({ n: '*' }))[0].n)
    const d0 = await denied()
    const h0 = await held()
    const viewer = ctx.s.as(ctx.tenant, ['viewer'], 'looker')
    const res = await post(FAST, body(), {}, viewer.token)
    assert.equal(res.status, 403)
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'FORBIDDEN')
    assert.equal(await denied(), d0 + 1)
    assert.equal((await held()).objects, h0.objects)
  })

  it('keeps tenants apart: the object is the token\'s tenant\'s, and another tenant cannot use this one\'s type', async () => {
    const other = ctx.s.as(`${ctx.tenant}-other`, ['owner'])
    const refused = await post(FAST, body(), {}, other.token)
    assert.equal(refused.status, 400)
    const created = await (await post(FAST, body())).json() as { id: string }
    assert.equal((await other.get(`/v1/objects/${created.id}`)).status, 404)
    assert.equal((await ctx.s.db('objects').where({ id: created.id }).first()).tenant_id, ctx.tenant)
  })

  it('counts and logs the request under the route template', async () => {
    const count = async () => {
      const text = await (await fetch(ctx.s.base + '/metrics')).text()
      const line = text.split('\n').find(l => l.startsWith('http_requests_total{') && l.includes('route="/v1/objects"') && l.includes('status="201"') && l.includes('method="POST"'))
      return line === undefined ? 0 : Number(line.split(' ').at(-1))
    }
    const c0 = await count()
    assert.equal((await post(FAST, body())).status, 201)
    assert.equal(await count(), c0 + 1)
  })
})

describe('the create on the edge: the rate limit', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'hotwrl', type: true, env: { RATE_LIMIT_LIMIT: '6' } })

  it('spends one point per request, on either path', async () => {
    // The session's type took 2 points (create, publish).
    const post = (text: string) => fetch(ctx.s.base + '/v1/objects', { method: 'POST', body: text, headers: { Authorization: `Bearer ${ctx.owner.token}`, 'Content-Type': 'application/json' } })
    const a = await post(JSON.stringify({ typeId: ctx.typeId, attributes: {} })) // the edge, point 3
    assert.equal(a.status, 201)
    assert.equal(a.headers.get('ratelimit-remaining'), '3')
    const b = await post('[]') // handed over with its body (400), point 4, not 5
    assert.equal(b.status, 400)
    assert.equal(b.headers.get('ratelimit-remaining'), '2')
    assert.equal((await post(JSON.stringify({ typeId: ctx.typeId }))).status, 201) // point 5
    assert.equal((await post(JSON.stringify({ typeId: ctx.typeId }))).status, 201) // point 6
    const c = await post(JSON.stringify({ typeId: ctx.typeId }))
    assert.equal(c.status, 429)
    assert.ok(Number(c.headers.get('retry-after')) >= 1)
  })
})
