import http from 'node:http'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { newTenant, publishedType, startServer, type Client, type TestServer } from '../support/harness.js'
import { timed } from '../support/timing.js'
import { createObject, point } from '../fixtures/objects.js'

// A viewer's query-DSL runs cost what their text filters cost on every row of the tenant:
// QUERY_STATEMENT_TIMEOUT_MS bounds each run's statements (503 NOT_READY, "ask for less"), and a
// query holds at most 20 text filters (docs/behaviour.md "Query service").

const ROWS = 20_000

/** The most text filters a query may hold, none matching: each is a LIKE over every row. */
const heavy = {
  filters: [{ operator: 'or', filters: Array.from({ length: 20 }, (_, i) => ({ field: 'attributes.name', operator: 'contains', value: `ab${i}`.repeat(1000) })) }],
  limit: 10
}

/** The tenant's NDJSON export with its reader paused after the first bytes: it holds a heavy slot until cut. */
function heldExport (base: string, token: string): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/v1/layers/objects/stream`, { headers: { Authorization: `Bearer ${token}` } }, res => {
      if (res.statusCode !== 200) { reject(new Error(`the export answered ${res.statusCode}`)); res.resume(); return }
      res.once('data', () => { res.pause(); resolve(() => { req.destroy() }) })
    })
    req.on('error', () => {})
  })
}

/** An answer read as fast as it comes (the NDJSON export by default): its size and how long it took. */
function readWhole (base: string, token: string, path = '/v1/layers/objects/stream'): Promise<{ bytes: number, ms: number }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    http.get(`${base}${path}`, { headers: { Authorization: `Bearer ${token}` } }, res => {
      if (res.statusCode !== 200) { reject(new Error(`${path} answered ${res.statusCode}`)); res.resume(); return }
      let bytes = 0
      res.on('data', (chunk: Buffer) => { bytes += chunk.length })
      res.on('end', () => { resolve({ bytes, ms: performance.now() - started }) })
      res.on('error', reject)
    }).on('error', reject)
  })
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/**
 * A light request of another tenant: the server has now seen someone besides the heavy tenant
 * within TENANT_ALONE_SECONDS, so the heavy lane's own rules hold it (a tenant alone may use more).
 */
async function neighbourCame (server: TestServer): Promise<void> {
  assert.equal((await server.as(newTenant('neighbour'), ['viewer']).get('/v1/objects?limit=1')).status, 200)
}

describe('query-DSL runs are bounded', { timeout: 120_000 }, () => {
  let bounded: TestServer
  let unbounded: TestServer
  const tenant = newTenant('heavy')
  let viewer: Client
  before(async () => {
    bounded = await startServer({ QUERY_STATEMENT_TIMEOUT_MS: '100' })
    unbounded = await startServer({ QUERY_STATEMENT_TIMEOUT_MS: '0' })
    viewer = bounded.as(tenant, ['viewer'])
    const typeId = await publishedType(bounded.as(tenant, ['owner']))
    await bounded.db.raw(`INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, version, valid_from, created_at, updated_at)
      SELECT gen_random_uuid(), ?, ?, 1, gen_random_uuid()::text, jsonb_build_object('name', repeat(md5(i::text), 30)), 1, now(), now(), now()
      FROM generate_series(1, ?) i`, [tenant, typeId, ROWS])
  })
  after(async () => { await bounded?.close(); await unbounded?.close() })

  it('lets a tenant run TENANT_MAX_CONCURRENT_HEAVY_REQUESTS heavy requests at once, its light ones and other tenants aside', async () => {
    const lane = await startServer({ QUERY_STATEMENT_TIMEOUT_MS: '0', TENANT_MAX_CONCURRENT_HEAVY_REQUESTS: '1', TENANT_MAX_QUEUED_REQUESTS: '0' })
    try {
      const page = (limit: number) => lane.request('GET', `/v1/layers/objects?limit=${limit}`, { token: viewer.token })
      const run = () => lane.request('POST', '/v1/queries/objects/run', { token: viewer.token, body: heavy })
      // Alone on the server, the tenant runs heavy requests up to its 8 slots: nobody to protect.
      assert.deepEqual((await Promise.all([run(), run()])).map(r => r.status), [200, 200])
      await neighbourCame(lane)
      assert.equal((await page(3)).status, 200, 'rendered, now in the render cache')
      // Sent together, each a few hundred ms of LIKE over every row: one takes the lane's one slot,
      // the other finds no slot and no queue place.
      const runs = Promise.all([run(), run()])
      await new Promise(resolve => setTimeout(resolve, 50))
      // A light request of the same tenant, and another tenant's heavy one, pass meanwhile.
      assert.equal((await lane.request('GET', '/v1/objects?limit=1', { token: viewer.token })).status, 200)
      const other = lane.as(newTenant('light'), ['viewer'])
      assert.equal((await other.post('/v1/queries/objects/run', { limit: 1 })).status, 200)
      // An export page the render cache holds takes no heavy slot; one it must render does.
      const [hit, miss] = [await page(3), await page(4)]
      assert.equal(hit.status, 200, hit.text)
      assert.equal(miss.status, 429, miss.text)
      assert.equal(miss.body.error.details.reason, 'tenant concurrency (heavy requests)')
      const [a, b] = await runs
      const refused = a.status === 429 ? a : b
      assert.deepEqual([a.status, b.status].sort(), [200, 429], `${a.text} ${b.text}`)
      assert.equal(refused.body.error.details.reason, 'tenant concurrency (heavy requests)')
    } finally { await lane.close() }
  })

  it('never deadlocks a tenant\'s pages that miss the render cache against its query runs (one order of lanes)', async () => {
    const lane = await startServer({ QUERY_STATEMENT_TIMEOUT_MS: '0', TENANT_MAX_CONCURRENT_REQUESTS: '2', TENANT_MAX_CONCURRENT_HEAVY_REQUESTS: '1', TENANT_QUEUE_TIMEOUT_MS: '4000' })
    try {
      await neighbourCame(lane)
      // Pages (each limit a new rendering) and query runs both wait for the heavy lane. Were one
      // kind to wait for it holding one of the tenant's two other slots, and the other to want such
      // a slot while holding the lane, each side would hold what the other waits for until the
      // queue's timeout.
      const calls = Array.from({ length: 6 }, (_, i) => i % 2 === 0
        ? lane.request('GET', `/v1/layers/objects?limit=${10 + i}`, { token: viewer.token })
        : lane.request('POST', '/v1/queries/objects/run', { token: viewer.token, body: { limit: 1 } }))
      const all = await timed(() => Promise.all(calls))
      assert.deepEqual(all.res.map(r => r.status), [200, 200, 200, 200, 200, 200], all.res.map(r => r.text).join('\n'))
      assert.ok(all.ms < 3000, `six light calls took ${Math.round(all.ms)} ms`)
    } finally { await lane.close() }
  })

  it('leaves a tenant\'s other slots to its light requests while its renderings wait for the heavy lane', async () => {
    const lane = await startServer({ QUERY_STATEMENT_TIMEOUT_MS: '0', TENANT_MAX_CONCURRENT_REQUESTS: '2', TENANT_MAX_CONCURRENT_HEAVY_REQUESTS: '1', TENANT_QUEUE_TIMEOUT_MS: '10000' })
    try {
      await neighbourCame(lane)
      const done: string[] = []
      const track = async (name: string, call: Promise<{ status: number, text: string }>) => { const r = await call; done.push(name); return r }
      // A run holds the lane for a few hundred ms; two pages that miss the render cache then wait
      // for it. Were they to wait holding the tenant's two slots, the get would wait for the run.
      const run = track('run', lane.request('POST', '/v1/queries/objects/run', { token: viewer.token, body: heavy }))
      await new Promise(resolve => setTimeout(resolve, 30))
      const pages = [21, 22].map(limit => track('page', lane.request('GET', `/v1/layers/objects?limit=${limit}`, { token: viewer.token })))
      await new Promise(resolve => setTimeout(resolve, 30))
      const get = await track('get', lane.request('GET', '/v1/objects?limit=1', { token: viewer.token }))
      assert.equal(get.status, 200, get.text)
      const all = await Promise.all([run, ...pages])
      assert.deepEqual(all.map(r => r.status), [200, 200, 200], all.map(r => r.text).join('\n'))
      assert.deepEqual(done.slice(0, 1), ['get'], `answered in the order ${done.join(', ')}`)
    } finally { await lane.close() }
  })

  it('lets a tenant whose heavy requests are short run them side by side, and holds one that owes time to its one slot', async () => {
    // The credit is generous beside an export's first byte (slower on Citus), and the pauses are
    // counted from it: what the tenant owes is bounded by one credit, so two credits' pause fills it.
    const credit = 1000
    const lane = await startServer({ QUERY_STATEMENT_TIMEOUT_MS: '0', TENANT_MAX_CONCURRENT_HEAVY_REQUESTS: '1', TENANT_HEAVY_BURST_REQUESTS: '4', TENANT_HEAVY_CREDIT_MS: String(credit), TENANT_MAX_QUEUED_REQUESTS: '0' })
    const cuts: Array<() => void> = []
    const held = async () => { cuts.push(await heldExport(lane.base, viewer.token)) }
    try {
      await neighbourCame(lane)
      const short = () => lane.request('POST', '/v1/queries/objects/run', { token: viewer.token, body: { limit: 1 } })
      // New to this process: no credit, so nothing passes beside a held export.
      await held()
      const untrusted = await short()
      assert.equal(untrusted.status, 429, untrusted.text)
      assert.equal(untrusted.body.error.details.reason, 'tenant concurrency (heavy requests)')
      cuts.pop()!()
      // Once the cut export's slot is back, short runs teach the lane what this tenant's take, and
      // a pause earns the credit.
      for (let i = 0; i < 50 && (await short()).status === 429; i++) await sleep(20)
      for (let i = 0; i < 12; i++) assert.equal((await short()).status, 200)
      await sleep(2 * credit + 100)
      await held()
      const beside = await short()
      assert.equal(beside.status, 200, `a short run beside the export: ${beside.text}`)
      // Held past the whole credit, the export is owed more than the tenant has: one slot again.
      await sleep(credit + 100)
      const owed = await short()
      assert.equal(owed.status, 429, owed.text)
    } finally {
      for (const cut of cuts) cut()
      await lane.close()
    }
  })

  it('sends heavy answers no faster than TENANT_HEAVY_MIB_PER_SECOND once another tenant is there, and unpaced to a tenant alone', async () => {
    const lane = await startServer({ TENANT_HEAVY_MIB_PER_SECOND: '4' })
    try {
      const rate = 4 * 1024 * 1024
      const atPace = (bytes: number) => bytes / rate * 1000
      // Alone on the server: as fast as the machine goes (the export is ~20 MB, 5 s at the pace).
      const alone = await readWhole(lane.base, viewer.token)
      assert.ok(alone.bytes > 2 * rate, `the export is ${alone.bytes} bytes`)
      assert.ok(alone.ms < atPace(alone.bytes) * 0.8, `alone: ${Math.round(alone.ms)} ms, the pace would take ${Math.round(atPace(alone.bytes))}`)
      await neighbourCame(lane)
      // The stream, read at the pace once the tenant's allowance (a second of it) is spent.
      const paced = await readWhole(lane.base, viewer.token)
      assert.equal(paced.bytes, alone.bytes)
      const least = atPace(paced.bytes - rate)
      assert.ok(paced.ms >= least * 0.95, `paced: ${Math.round(paced.ms)} ms for ${paced.bytes} bytes, at least ${Math.round(least)} expected`)
      // A GeoJSON page, made whole by the database, goes out at once; its bytes are paid by its
      // slot, held for their time, so the tenant's next heavy request waits for it.
      const started = performance.now()
      const page = await readWhole(lane.base, viewer.token, '/v1/layers/objects?limit=5000')
      assert.ok(page.bytes > rate, `the page is ${page.bytes} bytes`)
      assert.ok(page.ms < atPace(page.bytes) * 0.8, `the page itself took ${Math.round(page.ms)} ms`)
      assert.equal((await lane.request('POST', '/v1/queries/objects/run', { token: viewer.token, body: { limit: 1 } })).status, 200)
      const both = performance.now() - started
      assert.ok(both >= atPace(page.bytes) * 0.95, `page and next run: ${Math.round(both)} ms, at least ${Math.round(atPace(page.bytes))} expected`)
    } finally { await lane.close() }
  })

  it('refuses a query with more than 20 text filters (400 naming the filter), before any SQL', async () => {
    const res = await viewer.post('/v1/queries/objects/run', {
      filters: Array.from({ length: 21 }, () => ({ field: 'attributes.name', operator: 'contains', value: 'x' }))
    })
    assert.equal(res.status, 400)
    assert.equal(res.body.error.details.field, 'filters[20]')
    assert.match(res.body.error.message, /at most 20 text filters/)
  })

  it('cancels a run past QUERY_STATEMENT_TIMEOUT_MS with 503 NOT_READY, where an unbounded run holds its connection', async () => {
    const slow = await timed(() => unbounded.request('POST', '/v1/queries/objects/run', { token: viewer.token, body: heavy }))
    assert.equal(slow.res.status, 200, slow.res.text)
    assert.ok(slow.ms >= 300, `the heavy run took only ${Math.round(slow.ms)} ms unbounded: the fixture is too light to show the bound`)
    const cut = await timed(() => viewer.post('/v1/queries/objects/run', heavy))
    assert.equal(cut.res.status, 503, cut.res.text)
    assert.equal(cut.res.body.error.code, 'NOT_READY')
    assert.equal(cut.res.body.error.details.reason, 'statement timeout')
    assert.ok(cut.ms < slow.ms, `bounded ${Math.round(cut.ms)} ms, unbounded ${Math.round(slow.ms)} ms`)
  })

  it('gives a GraphQL document one QUERY_STATEMENT_TIMEOUT_MS for all its root fields, not one each', async () => {
    const fields = 10
    const doc = { query: `query ($q: ObjectQuery) { ${Array.from({ length: fields }, (_, i) => `q${i}: queryObjects(query: $q) { items { id } }`).join(' ')} }`, variables: { q: heavy } }
    // Each field alone runs until its statement is cancelled at 100 ms: ten of them in turn took a second or more.
    const answer = await timed(() => viewer.post('/v1/graphql', doc))
    assert.equal(answer.res.status, 200, answer.res.text)
    const codes = (answer.res.body.errors as Array<{ extensions: { code: string } }>).map(e => e.extensions.code)
    assert.deepEqual(codes, Array<string>(fields).fill('NOT_READY'))
    assert.ok(answer.ms < 600, `${fields} root fields took ${Math.round(answer.ms)} ms under a 100 ms budget`)
  })

  it('counts a GraphQL document\'s budget from its first costly statement, not from its wait for the heavy lane', async () => {
    // Three heavy runs ahead of it hold the tenant's one heavy slot in turn, 300 ms and more each
    // (a server of its own, the lane kept to that slot). The document itself reads one object by
    // id: far inside its 300 ms on either engine, even while Citus's workers still wind down the
    // cancelled runs.
    const lane = await startServer({ QUERY_STATEMENT_TIMEOUT_MS: '300', TENANT_HEAVY_BURST_REQUESTS: '0' })
    try {
      await neighbourCame(lane)
      const post = (path: string, body: unknown) => lane.request('POST', path, { token: viewer.token, body })
      const id = (await lane.db.raw('SELECT id::text FROM objects WHERE tenant_id = ? LIMIT 1', [tenant])).rows[0].id
      const ahead = Array.from({ length: 3 }, () => post('/v1/queries/objects/run', heavy))
      await new Promise(resolve => setTimeout(resolve, 20))
      const answer = await timed(() => post('/v1/graphql', {
        query: 'query ($id: JSON) { queryObjects(query: { filters: [{ field: "id", operator: "eq", value: $id }] }) { items { id } } }', variables: { id }
      }))
      assert.deepEqual((await Promise.all(ahead)).map(r => r.status), [503, 503, 503])
      assert.ok(answer.ms >= 750, `the document waited only ${Math.round(answer.ms)} ms: it did not queue behind the runs`)
      assert.equal(answer.res.status, 200, answer.res.text)
      assert.equal(answer.res.body.errors, undefined, answer.res.text)
      assert.equal(answer.res.body.data.queryObjects.items.length, 1)
    } finally { await lane.close() }
  })

  it('keeps another tenant fast and never 5xx, and readiness 200, under 30 parallel heavy runs of one viewer', async () => {
    const other = newTenant('calm')
    const owner = bounded.as(other, ['owner'])
    const typeId = await publishedType(owner, { geometry: { required: false, types: ['Point'] } })
    const id = (await createObject(owner, { typeId, attributes: { name: 'b' }, geometry: point() })).body.id
    const flood = Array.from({ length: 30 }, () => viewer.post('/v1/queries/objects/run', heavy))
    const checks = await Promise.all([
      timed(() => owner.get(`/v1/objects/${id}`)),
      timed(() => createObject(owner, { typeId, attributes: { name: 'c' }, geometry: point(13.5, 52.4) })),
      // A list, not a query run: this server bounds every query run at 100 ms, the other tenant's
      // too, which a loaded machine (or Citus) can pass on its own.
      timed(() => owner.get(`/v1/objects?typeId=${typeId}&limit=10`)),
      timed(() => bounded.request('GET', '/v1/health/ready'))
    ])
    assert.deepEqual(checks.map(c => c.res.status), [200, 201, 200, 200])
    for (const c of checks) assert.ok(c.ms < 2000, `the other tenant waited ${Math.round(c.ms)} ms`)
    // The flood's own answers: cancelled (503) or queued too long (429), never a 500.
    const statuses = new Set((await Promise.all(flood)).map(r => r.status))
    for (const s of statuses) assert.ok(s === 503 || s === 429, `flood answered ${s}`)
  })
})
