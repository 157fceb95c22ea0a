import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import jwt from 'jsonwebtoken'
import { flushAudit, newTenant, publishedType, startServer, type Client, type TestServer } from '../support/harness.js'
import { inDays, newIssuer, type Issuer } from '../support/license.js'
import * as counters from '../../lib/counters/index.js'

const SECRET = 'storage-secret-for-tests-0123456789abcdef'

/** Polls `probe` until it holds (a condition, not a sleep); fails after `ms`. */
async function until (what: string, probe: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!(await probe())) {
    if (Date.now() > end) assert.fail(`timed out waiting until ${what}`)
    await new Promise(resolve => setImmediate(resolve))
  }
}

const point = { type: 'Point', coordinates: [13.4, 52.5] }

describe('GET /v1/license without LICENSE_PUBLIC_KEY', () => {
  let s: TestServer
  before(async () => { s = await startServer() })
  after(() => s.close())

  it('is the development edition: valid, every feature on, no limits, usage counted', async () => {
    const owner = s.as(newTenant('lic'), ['owner'])
    await publishedType(owner)
    const res = await owner.get('/v1/license')
    assert.equal(res.status, 200)
    assert.equal(res.body.edition, 'development')
    assert.equal(res.body.status, 'valid')
    assert.equal(res.body.source, 'none')
    assert.deepEqual(res.body.limits, {})
    assert.equal(res.body.usage.object_type_count, 1)
    assert.ok(Object.values(res.body.features).every(v => v === true))
    assert.match(res.body.deploymentFingerprint, /^[0-9a-f]{32}$/)
  })

  it('refuses POST /v1/license with 400: there is no key to verify with', async () => {
    const res = await s.as(newTenant('lic'), ['owner']).post('/v1/license', { licenseKey: 'a.b.c' })
    assert.equal(res.status, 400)
    assert.equal(res.body.error.details.field, 'licenseKey')
  })

  it('is for owners, admins (read) and system_admin only', async () => {
    const t = newTenant('lic')
    assert.equal((await s.as(t, ['operator']).get('/v1/license')).status, 403)
    assert.equal((await s.as(t, ['admin']).get('/v1/license')).status, 200)
    assert.equal((await s.as(t, ['system_admin']).get('/v1/license')).status, 200)
    const denied = await s.as(t, ['admin']).post('/v1/license', { licenseKey: 'a.b.c' })
    assert.equal(denied.status, 403)
    assert.equal(denied.body.error.details.required, 'license:write')
  })
})

describe('licenses with LICENSE_PUBLIC_KEY and LICENSE_STORAGE_SECRET', () => {
  let issuer: Issuer
  let a: TestServer
  let b: TestServer
  before(async () => {
    issuer = newIssuer()
    const env = { LICENSE_PUBLIC_KEY: issuer.publicKey, LICENSE_STORAGE_SECRET: SECRET }
    // Two apps with their own pools and LISTEN connections: they meet only in PostgreSQL.
    a = await startServer(env)
    b = await startServer(env)
  })
  after(async () => { await a.close(); await b.close() })

  async function licensed (claims: Record<string, unknown> = {}): Promise<{ tenant: string, owner: Client }> {
    const tenant = newTenant('lic')
    const owner = a.as(tenant, ['owner'])
    const res = await owner.post('/v1/license', { licenseKey: issuer.sign({ tenant, exp: inDays(365), ...claims }) })
    assert.equal(res.status, 200, res.text)
    return { tenant, owner }
  }

  it('a tenant without a license reads, runs queries, and gets LICENSE_EXPIRED on writes', async () => {
    const owner = a.as(newTenant('lic'), ['owner'])
    const lic = await owner.get('/v1/license')
    assert.deepEqual([lic.body.edition, lic.body.status, lic.body.source], ['none', 'expired', 'none'])
    const write = await owner.post('/v1/object-types', { key: 'k', name: 'n' })
    assert.equal(write.status, 403)
    assert.equal(write.body.error.code, 'LICENSE_EXPIRED')
    assert.equal((await owner.get('/v1/objects')).status, 200)
    assert.equal((await owner.post('/v1/queries/objects/run', { filters: [] })).status, 200)
    assert.equal((await owner.put('/v1/permissions/policy', { roles: {} })).body.error.code, 'LICENSE_EXPIRED')
  })

  it('installs a license: switches at once, stores it sealed, and another process sees it without a restart', async () => {
    const tenant = newTenant('lic')
    const owner = a.as(tenant, ['owner'])
    const key = issuer.sign({ tenant, edition: 'enterprise', exp: inDays(365), metadata: { customer: 'ACME' } })
    // Warm b's cache with "no license" first, so seeing the install needs the notification.
    assert.equal((await b.as(tenant, ['owner']).get('/v1/license')).body.source, 'none')
    const res = await owner.post('/v1/license', { licenseKey: key })
    assert.equal(res.status, 200)
    assert.deepEqual([res.body.edition, res.body.status, res.body.source, res.body.storage], ['enterprise', 'valid', 'installed', 'encrypted'])
    assert.deepEqual(res.body.metadata, { customer: 'ACME' })
    assert.equal((await owner.post('/v1/object-types', { key: 'k', name: 'n' })).status, 201)
    const row = await a.db.raw('SELECT sealed FROM tenant_licenses WHERE tenant_id = ?', [tenant])
    assert.equal(row.rows.length, 1)
    assert.ok(!row.rows[0].sealed.includes(key.split('.')[1]), 'the token is not stored in clear')
    const other = b.as(tenant, ['owner'])
    await until('the other process sees the installed license', async () => (await other.get('/v1/license')).body.source === 'installed')
    assert.equal((await other.post('/v1/object-types', { key: 'k2', name: 'n' })).status, 201)
    assert.equal((await b.as(tenant, ['owner']).get('/v1/license')).body.deploymentFingerprint, res.body.deploymentFingerprint)
  })

  it('refuses tampered, wrongly signed, wrong-algorithm and wrong-tenant licenses with 400, changing nothing', async () => {
    const tenant = newTenant('lic')
    const owner = a.as(tenant, ['owner'])
    const good = issuer.sign({ tenant, exp: inDays(365) })
    const [h, p, sig] = good.split('.')
    const forged = Buffer.from(JSON.stringify({ ...jwt.decode(good) as object, limits: { object_count: 1e9 } })).toString('base64url')
    const candidates = {
      tampered: `${h}.${forged}.${sig}`,
      'signed by another key': newIssuer().sign({ tenant, exp: inDays(365) }),
      'HS256 with the public key as secret': `${Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url')}.${p}.${jwt.sign({}, 'x').split('.')[2]}`,
      'alg none': `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${p}.`,
      'another tenant': issuer.sign({ tenant: 'someone-else', exp: inDays(365) }),
      'not a JWT': 'hello'
    }
    for (const [what, licenseKey] of Object.entries(candidates)) {
      const res = await owner.post('/v1/license', { licenseKey })
      assert.equal(res.status, 400, what)
      assert.equal(res.body.error.details.field, 'licenseKey', what)
    }
    // HS256 signed with the PEM itself (the classic confusion) is refused too.
    const hs = jwt.sign({ tenant, edition: 'x' }, issuer.publicKey, { algorithm: 'HS256' })
    assert.equal((await owner.post('/v1/license', { licenseKey: hs })).status, 400)
    assert.equal((await owner.get('/v1/license')).body.source, 'none')
    const rows = await a.db.raw('SELECT count(*)::int AS n FROM tenant_licenses WHERE tenant_id = ?', [tenant])
    assert.equal(rows.rows[0].n, 0)
  })

  it('reports expiring_soon and expired by the license time, and an expired one refuses writes until replaced', async () => {
    const { tenant, owner } = await licensed({ exp: inDays(10) })
    assert.equal((await owner.get('/v1/license')).body.status, 'expiring_soon')
    assert.equal((await owner.post('/v1/license', { licenseKey: issuer.sign({ tenant, exp: inDays(-1) }) })).body.status, 'expired')
    assert.equal((await owner.post('/v1/object-types', { key: 'k', name: 'n' })).body.error.code, 'LICENSE_EXPIRED')
    assert.equal((await owner.post('/v1/license', { licenseKey: issuer.sign({ tenant, exp: inDays(100) }) })).body.status, 'valid')
    assert.equal((await owner.post('/v1/object-types', { key: 'k', name: 'n' })).status, 201)
  })

  it('20 concurrent creates racing for 5 slots: exactly 5 win; the rest get 403 with limitCode and current, audited and counted', async () => {
    const { tenant, owner } = await licensed({ limits: { object_count: 5 } })
    const typeId = await publishedType(owner)
    const results = await Promise.all(Array.from({ length: 20 }, () => owner.post('/v1/objects', { typeId, attributes: {} })))
    assert.equal(results.filter(r => r.status === 201).length, 5)
    const refused = results.filter(r => r.status !== 201)
    assert.equal(refused.length, 15)
    for (const r of refused) {
      assert.equal(r.status, 403)
      assert.equal(r.body.error.code, 'LICENSE_LIMIT_EXCEEDED')
      assert.deepEqual(r.body.error.details, { limitCode: 'object_count', limit: 5, current: 5 })
    }
    const live = await a.db.raw('SELECT count(*)::int AS n FROM objects WHERE tenant_id = ?', [tenant])
    assert.equal(live.rows[0].n, 5, 'nothing of the refused writes was kept')
    assert.equal((await owner.get('/v1/license')).body.usage.object_count, 5)
    await until('the refusals are audited', async () => {
      await flushAudit(a.db, tenant)
      return (await owner.get('/v1/audit/events?type=license.limit_exceeded')).body.pagination.total === 15
    })
    const created = await owner.get('/v1/audit/events?type=object.created')
    assert.equal(created.body.pagination.total, 5)
    assert.match((await a.request('GET', '/metrics')).text, /license_limit_exceeded_total\{limit_code="object_count"\} [1-9]/)
    // Deleting one frees a slot.
    const first = results.find(r => r.status === 201)
    assert.equal((await owner.delete(`/v1/objects/${first?.body.id}`)).status, 204)
    assert.equal((await owner.post('/v1/objects', { typeId, attributes: {} })).status, 201)
    assert.equal((await owner.post('/v1/objects', { typeId, attributes: {} })).status, 403)
  })

  it('creates far from their object_count limit pass the check inside their one statement, and are counted', async () => {
    // 2,000,000 is beyond the shared path's slack (about 800 holders x 1,000 units), so the
    // check passes in the statement (license_quota_shared) without the transaction's exact path.
    const { tenant, owner } = await licensed({ limits: { object_count: 2_000_000 } })
    const typeId = await publishedType(owner)
    for (let i = 0; i < 3; i++) assert.equal((await owner.post('/v1/objects', { typeId, attributes: {} })).status, 201)
    const batch = await owner.post('/v1/objects/batch', { items: [{ typeId, attributes: {} }, { typeId, attributes: {} }] })
    assert.equal(batch.status, 201, batch.text)
    assert.equal((await owner.get('/v1/license')).body.usage.object_count, 5)
    const live = await a.db.raw('SELECT count(*)::int AS n FROM objects WHERE tenant_id = ?', [tenant])
    assert.equal(live.rows[0].n, 5)
  })

  it('creates far from the limit fold their counter as they go: totals exact, rows bounded, beside the worker\'s fold', async () => {
    const { tenant, owner } = await licensed({ limits: { object_count: 2_000_000 } })
    const typeId = await publishedType(owner)
    const objectRows = async () => (await a.db.raw("SELECT count(*)::int AS n FROM counter_deltas WHERE tenant_id = ? AND counter = 'objects'", [tenant])).rows[0].n
    const create = (n: number) => Promise.all(Array.from({ length: n }, () => owner.post('/v1/objects', { typeId, attributes: {} })))
    const first = await create(80)
    assert.ok(first.every(r => r.status === 201))
    // license_quota_shared folds once more than 32 rows lie beyond one per bucket: what is left is
    // at most that, the folded row, and the rows of writes in flight during the last fold.
    assert.ok(await objectRows() <= 33 + 16, `${await objectRows()} rows`)
    assert.equal((await owner.get('/v1/license')).body.usage.object_count, 80)
    // The worker's fold and the writes' folds take the same tenant lock and never wait for each other.
    const [second] = await Promise.all([create(60), counters.fold(a.db, { tenantId: tenant, minRows: 1 }), counters.fold(a.db, { tenantId: tenant, minRows: 1 })])
    assert.ok(second.every(r => r.status === 201))
    assert.equal((await owner.get('/v1/license')).body.usage.object_count, 140)
    const live = await a.db.raw('SELECT count(*)::int AS n FROM objects WHERE tenant_id = ?', [tenant])
    assert.equal(live.rows[0].n, 140)
  })

  it('a batch that would cross object_count is refused whole, writing nothing', async () => {
    const { tenant, owner } = await licensed({ limits: { object_count: 3 } })
    const typeId = await publishedType(owner)
    assert.equal((await owner.post('/v1/objects', { typeId, attributes: {} })).status, 201)
    const res = await owner.post('/v1/objects/batch', { items: Array.from({ length: 3 }, () => ({ typeId, attributes: {} })) })
    assert.equal(res.status, 403)
    assert.equal(res.body.error.details.limitCode, 'object_count')
    const live = await a.db.raw('SELECT count(*)::int AS n FROM objects WHERE tenant_id = ?', [tenant])
    assert.equal(live.rows[0].n, 1)
  })

  it('object_type_count and relation_count refuse creates at their limits', async () => {
    const { owner } = await licensed({ limits: { object_type_count: 1, relation_count: 1 } })
    const typeId = await publishedType(owner)
    const second = await owner.post('/v1/object-types', { key: 'second', name: 'n' })
    assert.deepEqual([second.status, second.body.error.details.limitCode, second.body.error.details.current], [403, 'object_type_count', 1])
    const ids = []
    for (let i = 0; i < 3; i++) ids.push((await owner.post('/v1/objects', { typeId, attributes: {} })).body.id)
    assert.equal((await owner.post('/v1/relations', { fromObjectId: ids[0], toObjectId: ids[1], relationType: 'feeds' })).status, 201)
    const over = await owner.post('/v1/relations', { fromObjectId: ids[1], toObjectId: ids[2], relationType: 'feeds' })
    assert.deepEqual([over.status, over.body.error.details.limitCode], [403, 'relation_count'])
    assert.equal((await owner.get('/v1/license')).body.usage.relation_count, 1)
  })

  it('workflow_run_count refuses the transition past the monthly limit', async () => {
    const { owner } = await licensed({ limits: { workflow_run_count: 2 } })
    const wf = await owner.post('/v1/workflows', {
      key: 'flip', name: 'Flip', initialState: 'a', states: [{ name: 'a' }, { name: 'b' }],
      transitions: [{ from: ['a'], targetState: 'b' }, { from: ['b'], targetState: 'a' }]
    })
    assert.equal(wf.status, 201, wf.text)
    const typeId = await publishedType(owner, { workflowId: wf.body.id })
    const o = (await owner.post('/v1/objects', { typeId, attributes: {} })).body
    assert.equal((await owner.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'b' })).status, 200)
    assert.equal((await owner.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'a' })).status, 200)
    const third = await owner.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'b' })
    assert.deepEqual([third.status, third.body.error.code, third.body.error.details.current], [403, 'LICENSE_LIMIT_EXCEEDED', 2])
    assert.equal((await owner.get(`/v1/objects/${o.id}`)).body.workflowState, 'a', 'the refused transition changed nothing')
    assert.equal((await owner.get('/v1/license')).body.usage.workflow_run_count, 2)
  })

  it('query_count counts query runs per UTC month: last month\'s runs do not count', async () => {
    const { tenant, owner } = await licensed({ limits: { query_count: 2 } })
    const last = new Date(); last.setUTCDate(1); last.setUTCMonth(last.getUTCMonth() - 1)
    await a.db.raw('INSERT INTO counter_deltas (tenant_id, counter, bucket, delta) VALUES (?, ?, ?, 50)', [tenant, 'queries', counters.monthBucket(last)])
    assert.equal((await owner.post('/v1/queries/objects/run', { filters: [] })).status, 200)
    assert.equal((await owner.post('/v1/queries/objects/run', { filters: [] })).status, 200)
    const third = await owner.post('/v1/queries/objects/run', { filters: [] })
    assert.deepEqual([third.status, third.body.error.details.limitCode, third.body.error.details.current], [403, 'query_count', 2])
    assert.equal((await owner.get('/v1/queries/objects')).status, 200, 'the simple list is a read, not a query run')
    assert.equal((await owner.get('/v1/license')).body.usage.query_count, 2)
  })

  it('switched-off features answer 403 FEATURE_DISABLED on every route of the module', async () => {
    const { owner } = await licensed({ features: { relations: false, queries: false, audit: false } })
    const typeId = await publishedType(owner)
    const o = (await owner.post('/v1/objects', { typeId, attributes: {}, geometry: point })).body
    const calls = [
      owner.get('/v1/relations'), owner.post('/v1/relations', { fromObjectId: o.id, toObjectId: o.id, relationType: 'x' }),
      owner.get(`/v1/objects/${o.id}/relations`), owner.post('/v1/queries/objects/run', { filters: [] }),
      owner.get('/v1/queries/objects'), owner.get('/v1/audit/events'), owner.get('/v1/audit/tree-head'),
      owner.get('/v1/audit/consistency-proof?first=1'), owner.get(`/v1/audit/events/${o.id}/inclusion-proof`)
    ]
    for (const res of await Promise.all(calls)) {
      assert.equal(res.status, 403)
      assert.equal(res.body.error.code, 'FEATURE_DISABLED')
    }
    assert.equal((await owner.get(`/v1/objects/${o.id}`)).status, 200)
    const lic = await owner.get('/v1/license')
    assert.deepEqual(lic.body.features, { automation: true, graphql: true, tiles: true, ogc: true, relations: false, queries: false, audit: false })
  })
})

describe('licenses without LICENSE_STORAGE_SECRET', () => {
  let issuer: Issuer
  let a: TestServer
  let b: TestServer
  before(async () => {
    issuer = newIssuer()
    a = await startServer({ LICENSE_PUBLIC_KEY: issuer.publicKey })
    b = await startServer({ LICENSE_PUBLIC_KEY: issuer.publicKey })
  })
  after(async () => { await a.close(); await b.close() })

  it('keeps an installed license in this process\'s memory only, and says so', async () => {
    const tenant = newTenant('lic')
    const res = await a.as(tenant, ['owner']).post('/v1/license', { licenseKey: issuer.sign({ tenant, exp: inDays(365) }) })
    assert.equal(res.status, 200)
    assert.equal(res.body.storage, 'memory')
    assert.match(res.body.warning, /LICENSE_STORAGE_SECRET/)
    assert.equal((await a.as(tenant, ['owner']).get('/v1/license')).body.source, 'installed')
    assert.equal((await b.as(tenant, ['owner']).get('/v1/license')).body.source, 'none')
    const rows = await a.db.raw('SELECT count(*)::int AS n FROM tenant_licenses WHERE tenant_id = ?', [tenant])
    assert.equal(rows.rows[0].n, 0)
  })

  it('LICENSE_KEY applies to every tenant', async () => {
    const s = await startServer({ LICENSE_PUBLIC_KEY: issuer.publicKey, LICENSE_KEY: issuer.sign({ edition: 'site', exp: inDays(100), limits: { object_count: 7 } }) })
    try {
      for (const t of [newTenant('lic'), newTenant('lic')]) {
        const res = await s.as(t, ['owner']).get('/v1/license')
        assert.deepEqual([res.body.edition, res.body.source, res.body.limits.object_count], ['site', 'environment', 7])
      }
    } finally {
      await s.close()
    }
  })
})
