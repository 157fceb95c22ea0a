import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, newTenant, type TestServer, type Client } from '../support/harness.js'

// POST /v1/automation/triggers/{slug} on the edge (server/http/edge.ts). The reference is the
// same route reached through Koa's router, by a request the edge does not take: the path with a
// trailing slash (the router is not strict). Both run the same compiled route.

describe('the automation ingress on the edge and through Koa', () => {
  let s: TestServer
  let owner: Client
  let hook = { id: '', webhookToken: '' }
  before(async () => {
    s = await startServer({}, { jobs: true })
    owner = s.as(newTenant('hot-ingress'), ['owner'])
    const r = await owner.post('/v1/automation/rules', { name: 'Hook', trigger: { type: 'webhook', slug: 'hot' }, effect: { type: 'webhook', url: 'https://example.invalid/hook' } })
    assert.equal(r.status, 201, r.text)
    hook = r.body
    assert.equal((await owner.post(`/v1/automation/rules/${hook.id}/publish`, { to: 'sandbox' })).status, 200)
  })
  after(() => s.close())

  const call = (path: string, body: string, headers: Record<string, string> = {}) => fetch(s.base + path, {
    method: 'POST', body, headers: { Authorization: `Bearer ${hook.webhookToken}`, 'Content-Type': 'application/json', ...headers }
  })
  /** The edge's answer and Koa's to the same call. */
  const both = async (body: string, headers: Record<string, string> = {}, slug = 'hot') => {
    const a = await call(`/v1/automation/triggers/${slug}`, body, headers)
    const b = await call(`/v1/automation/triggers/${slug}/`, body, headers)
    return [a, b]
  }
  const runs = async () => (await owner.get(`/v1/automation/rules/${hook.id}/runs?limit=100`)).body.pagination.total as number

  it('queues a run and answers 202 as the route does: body, headers, Idempotency-Key', async () => {
    const before = await runs()
    const [fast, koa] = await both('{"id": 1}')
    assert.deepEqual([fast.status, koa.status], [202, 202])
    for (const h of ['content-type', 'ratelimit-limit']) assert.equal(fast.headers.get(h), koa.headers.get(h), h)
    assert.match(fast.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/)
    const [x, y] = [await fast.json() as { accepted: boolean, runIds: string[] }, await koa.json() as { accepted: boolean, runIds: string[] }]
    assert.deepEqual([x.accepted, x.runIds.length, y.runIds.length], [true, 1, 1])
    assert.notEqual(x.runIds[0], y.runIds[0])
    assert.equal(await runs(), before + 2)
    const run = (await owner.get(`/v1/automation/rules/${hook.id}/runs/${x.runIds[0]}`)).body
    assert.deepEqual(run.input, { id: 1 })
    // A retried delivery finds its run on either path.
    const [k1, k2] = await both('{"id": 2}', { 'Idempotency-Key': 'delivery-7' })
    assert.deepEqual((await k1.json() as { runIds: string[] }).runIds, (await k2.json() as { runIds: string[] }).runIds)
    assert.equal(await runs(), before + 3)
  })

  it('answers every refusal alike on both paths', async () => {
    const before = await runs()
    const cases: Array<[string, string, Record<string, string>, string, number]> = [
      ['not JSON', '{"id": ', {}, 'hot', 400],
      ['not an object', '[1]', {}, 'hot', 400],
      ['not strict JSON', '"text"', {}, 'hot', 400],
      ['a prototype key', '{"__proto__": {"x": 1}}', {}, 'hot', 400],
      ['a bad token', '{}', { Authorization: 'Bearer garbage' }, 'hot', 401],
      ['no token', '{}', { Authorization: '' }, 'hot', 401],
      ['an unknown slug', '{}', {}, 'nope', 404]
    ]
    for (const [what, body, headers, slug, status] of cases) {
      const [fast, koa] = await both(body, headers, slug)
      assert.deepEqual([fast.status, koa.status], [status, status], what)
      assert.deepEqual(await fast.json(), await koa.json(), what)
    }
    assert.equal(await runs(), before, 'nothing queued')
  })

  it('reads every JSON media type and charset alike on both paths', async () => {
    // A +json type is JSON to the route (middleware/body.ts).
    const cases: Array<[string, number]> = [['application/json; charset=latin1', 202], ['application/merge-patch+json', 202], ['application/vnd.example+json', 202], ['text/plain', 400]]
    for (const [type, status] of cases) {
      const [fast, koa] = await both('{"id": 3}', { 'Content-Type': type }, 'hot')
      assert.deepEqual([fast.status, koa.status], [status, status], type)
    }
  })

  it('keeps tenants apart: a token names its own tenant and rule only', async () => {
    const other = s.as(newTenant('hot-ingress-other'), ['owner'])
    const r = await other.post('/v1/automation/rules', { name: 'Hook', trigger: { type: 'webhook', slug: 'hot' }, effect: { type: 'webhook', url: 'https://example.invalid/hook' } })
    await other.post(`/v1/automation/rules/${r.body.id}/publish`, { to: 'sandbox' })
    const res = await call('/v1/automation/triggers/hot', '{"id": 5}', { Authorization: `Bearer ${r.body.webhookToken}` })
    assert.equal(res.status, 202)
    const id = (await res.json() as { runIds: string[] }).runIds[0]
    assert.equal((await other.get(`/v1/automation/rules/${r.body.id}/runs/${id}`)).status, 200)
    assert.equal((await owner.get(`/v1/automation/rules/${hook.id}/runs/${id}`)).status, 404)
  })
})
