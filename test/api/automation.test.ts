import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, newTenant, publishedType, type TestServer, type Client } from '../support/harness.js'
import { inDays, newIssuer, type Issuer } from '../support/license.js'

// The automation API without workers: rules, versions, validation, ingress answers, isolation.
// Runs are queued (pg-boss sender on the test database) but not executed here; see
// test/jobs/automation.test.ts for the engine end to end.

const webhookRule = (slug: string, extra: Record<string, unknown> = {}) => ({
  name: 'Hook', trigger: { type: 'webhook', slug }, effect: { type: 'webhook', url: 'https://example.invalid/hook', body: { id: '{{payload.id}}' } }, ...extra
})

describe('/v1/automation', () => {
  let s: TestServer
  let owner: Client
  let tenant: string
  before(async () => {
    s = await startServer({}, { jobs: true })
    tenant = newTenant('auto-api')
    owner = s.as(tenant, ['owner'])
  })
  after(() => s.close())

  async function create (body: Record<string, unknown>): Promise<Record<string, any>> {
    const r = await owner.post('/v1/automation/rules', body)
    assert.equal(r.status, 201, r.text)
    return r.body
  }

  describe('validation answers 400 naming the path, and writes nothing', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['retry.maxAttempts out of range', webhookRule('v1', { effect: { type: 'webhook', url: 'https://x.invalid', retry: { maxAttempts: 0 } } }), 'effect.retry.maxAttempts'],
      ['a webhook trigger without slug', { name: 'x', trigger: { type: 'webhook' }, effect: { type: 'webhook', url: 'https://x.invalid' } }, 'trigger.slug'],
      ['a field of another trigger type', { name: 'x', trigger: { type: 'webhook', slug: 'v3', cron: '* * * * *' }, effect: { type: 'webhook', url: 'https://x.invalid' } }, 'trigger.cron'],
      ['a bad cron', { name: 'x', trigger: { type: 'schedule', cron: '61 * * * *' }, effect: { type: 'webhook', url: 'https://x.invalid' } }, 'trigger.cron'],
      ['a cron with seconds (a schedule fires at most once a minute)', { name: 'x', trigger: { type: 'schedule', cron: '*/5 * * * * *' }, effect: { type: 'webhook', url: 'https://x.invalid' } }, 'trigger.cron'],
      ['an unknown time zone', { name: 'x', trigger: { type: 'schedule', cron: '* * * * *', timezone: 'Mars/Olympus' }, effect: { type: 'webhook', url: 'https://x.invalid' } }, 'trigger.timezone'],
      ['a bad match path', webhookRule('v6', { match: [{ type: 'attribute', path: '$.a', operator: 'exists' }, { type: 'attribute', path: 'a..b', operator: 'equals', value: 1 }] }), 'match[1].path'],
      ['an unknown JsonLogic operator', webhookRule('v7', { condition: { and: [{ eval: 'x' }] } }), 'condition.and[0].eval'],
      ['an unknown template variable', webhookRule('v8', { effect: { type: 'webhook', url: 'https://x.invalid', headers: { 'X-A': '{{secret.key}}' } } }), 'effect.headers.X-A'],
      ['a transition without objectId on a webhook trigger', { name: 'x', trigger: { type: 'webhook', slug: 'v9' }, effect: { type: 'workflow.transition', targetState: 'done' } }, 'effect.objectId'],
      ['a non-http url', webhookRule('v10', { effect: { type: 'webhook', url: 'file:///etc/passwd' } }), 'effect.url'],
      ['an unknown event', { name: 'x', trigger: { type: 'object.event', events: ['object.exploded'] }, effect: { type: 'webhook', url: 'https://x.invalid' } }, 'trigger.events[0]']
    ]
    for (const [what, body, field] of cases) {
      it(`${what} -> ${field}`, async () => {
        const r = await owner.post('/v1/automation/rules', body)
        assert.equal(r.status, 400, r.text)
        assert.equal(r.body.error.code, 'VALIDATION_ERROR')
        assert.equal(r.body.error.details.field, field)
      })
    }
    it('left no rule behind', async () => {
      const list = await owner.get('/v1/automation/rules')
      assert.equal(list.body.items.filter((r: { name: string }) => r.name === 'x').length, 0)
    })
  })

  it('refuses a webhook URL naming a private, loopback or link-local address literally, on create and PATCH (400 effect.url)', async () => {
    const before = (await owner.get('/v1/automation/rules')).body.pagination.total
    const urls = ['http://127.0.0.1:9999/x', 'http://10.1.2.3/', 'http://169.254.169.254/latest/meta-data/', 'http://2130706433/', 'http://[::1]/',
      'http://[::127.0.0.1]/', 'http://[::7f00:1]/', 'http://[::ffff:10.0.0.1]/', 'http://[64:ff9b::a9fe:a9fe]/', 'http://[2002:c0a8:101::1]/', 'https://[fe80::1]:8443/{{object.id}}']
    for (const url of urls) {
      const r = await owner.post('/v1/automation/rules', webhookRule('private', { effect: { type: 'webhook', url } }))
      assert.equal(r.status, 400, `${url}: ${r.text}`)
      assert.equal(r.body.error.code, 'VALIDATION_ERROR')
      assert.equal(r.body.error.details.field, 'effect.url')
      assert.match(r.body.error.details.reason, /WEBHOOK_ALLOW_PRIVATE_NETWORKS/)
    }
    assert.equal((await owner.get('/v1/automation/rules')).body.pagination.total, before, 'nothing written')
    // A name is judged at delivery (its DNS answer can change); a public literal is fine.
    const rule = await create(webhookRule('named', { effect: { type: 'webhook', url: 'http://localhost:9999/x' } }))
    await create(webhookRule('public', { effect: { type: 'webhook', url: 'http://[64:ff9b::808:808]/x' } }))
    const patched = await owner.patch(`/v1/automation/rules/${rule.id}`, { effect: { url: 'http://[::ffff:127.0.0.1]/x' } })
    assert.equal(patched.status, 400, patched.text)
    assert.equal(patched.body.error.details.field, 'effect.url')
    assert.equal((await owner.get(`/v1/automation/rules/${rule.id}`)).body.effect.url, 'http://localhost:9999/x', 'unchanged')
  })

  it('takes private webhook addresses when WEBHOOK_ALLOW_PRIVATE_NETWORKS=true', async () => {
    const open = await startServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })
    try {
      const r = await open.as(newTenant('auto-private'), ['owner']).post('/v1/automation/rules', webhookRule('private', { effect: { type: 'webhook', url: 'http://127.0.0.1:9999/x' } }))
      assert.equal(r.status, 201, r.text)
    } finally {
      await open.close()
    }
  })

  it('a cron with seconds is refused saying a schedule fires at most once a minute', async () => {
    const r = await owner.post('/v1/automation/rules', { name: 'x', trigger: { type: 'schedule', cron: '0 * * * * *' }, effect: { type: 'webhook', url: 'https://x.invalid' } })
    assert.equal(r.status, 400, r.text)
    assert.deepEqual([r.body.error.code, r.body.error.details.field], ['VALIDATION_ERROR', 'trigger.cron'])
    assert.match(r.body.error.message, /at most once a minute/)
    const five = await create({ name: 'Every minute', trigger: { type: 'schedule', cron: '* * * * *' }, effect: { type: 'webhook', url: 'https://x.invalid' } })
    const p = await owner.patch(`/v1/automation/rules/${five.id}`, { trigger: { type: 'schedule', cron: '*/5 * * * * *' } })
    assert.equal(p.status, 400, p.text)
    assert.equal(p.body.error.details.field, 'trigger.cron')
  })

  it('an object.event trigger.typeId must name a live type of this tenant (400, nothing written)', async () => {
    const stranger = s.as(newTenant('auto-api'), ['owner'])
    const theirs = await publishedType(stranger)
    const gone = await publishedType(owner)
    assert.equal((await owner.delete(`/v1/object-types/${gone}`)).status, 204)
    const rule = (typeId: string) => ({ name: 'typed', trigger: { type: 'object.event', events: ['object.created'], typeId }, effect: { type: 'webhook', url: 'https://x.invalid' } })
    const count = async () => (await s.db('automation_rules').where({ tenant_id: tenant }).count({ n: '*' }))[0].n
    const before = await count()
    for (const [what, typeId] of [['unknown', '00000000-0000-4000-8000-000000000000'], ["another tenant's", theirs], ['deleted', gone]]) {
      const r = await owner.post('/v1/automation/rules', rule(typeId))
      assert.equal(r.status, 400, `${what}: ${r.text}`)
      assert.deepEqual([r.body.error.code, r.body.error.details.field], ['VALIDATION_ERROR', 'trigger.typeId'], r.text)
      assert.match(r.body.error.message, /does not exist in this tenant/)
    }
    assert.equal(await count(), before, 'nothing written')
    const mine = await publishedType(owner)
    const ok = await create(rule(mine))
    const read = (await owner.get(`/v1/automation/rules/${ok.id}`)).body
    const p = await owner.patch(`/v1/automation/rules/${ok.id}`, { trigger: { type: 'object.event', events: ['object.created'], typeId: theirs } })
    assert.equal(p.status, 400, p.text)
    assert.equal(p.body.error.details.field, 'trigger.typeId')
    assert.deepEqual((await owner.get(`/v1/automation/rules/${ok.id}`)).body, read, 'the PATCH changed nothing')
  })

  it('creates a draft, shows the token and signing secret once, and lists and reads it', async () => {
    const r = await create(webhookRule('shown-once'))
    assert.equal(r.status, 'draft')
    assert.equal(r.version, 1)
    assert.match(r.webhookToken, /\./)
    assert.match(r.signingSecret, /^whsec_/)
    const read = await owner.get(`/v1/automation/rules/${r.id}`)
    assert.equal(read.status, 200)
    assert.equal(read.body.webhookToken, undefined)
    assert.equal(read.body.signingSecret, undefined)
    assert.ok((await owner.get('/v1/automation/rules?status=draft')).body.items.some((x: { id: string }) => x.id === r.id))
    assert.equal((await owner.post('/v1/automation/rules', webhookRule('shown-once'))).status, 409, 'slug is unique per tenant')
  })

  it('PATCH on an active rule opens a new version; the active one keeps running until the next publish', async () => {
    const r = await create(webhookRule('versions'))
    assert.equal((await owner.post(`/v1/automation/rules/${r.id}/publish`)).body.status, 'active')
    const p = await owner.patch(`/v1/automation/rules/${r.id}`, { name: 'Hook v2' })
    assert.equal(p.status, 200, p.text)
    assert.deepEqual([p.body.version, p.body.liveVersion, p.body.status, p.body.name], [2, 1, 'active', 'Hook v2'])
    const i = await s.request('POST', '/v1/automation/triggers/versions', { token: r.webhookToken, body: { id: 1 } })
    assert.equal(i.status, 202)
    const run = (await owner.get(`/v1/automation/rules/${r.id}/runs`)).body.items[0]
    assert.equal(run.ruleVersion, 1, 'the active version runs')
    assert.equal(run.status, 'queued')
    const pub = await owner.post(`/v1/automation/rules/${r.id}/publish`, { to: 'active' })
    assert.equal(pub.body.liveVersion, 2)
    assert.equal((await owner.post(`/v1/automation/rules/${r.id}/publish`, { to: 'active' })).status, 409, 'nothing new to publish')
    assert.equal((await owner.post(`/v1/automation/rules/${r.id}/publish`, { to: 'sandbox' })).status, 409, 'no going back')
    const reg = await owner.get(`/v1/schema-registry/automation-rules/${r.id}`)
    assert.equal(reg.body.entityType, 'automation-rules')
    assert.deepEqual(reg.body.versions.map((v: { version: number, status: string }) => [v.version, v.status]), [[1, 'active'], [2, 'active']])
    assert.equal(reg.body.versions[1].definition.name, 'Hook v2')
  })

  it('PATCH merges the effect and the trigger one level deep; a null removes a field, another type replaces the part', async () => {
    const r = await create({ ...webhookRule('merged'), effect: { type: 'webhook', url: 'https://example.invalid/a', headers: { 'X-Team': 'field' }, body: { pole: '{{payload.id}}' }, retry: { maxAttempts: 2 } } })
    const p = await owner.patch(`/v1/automation/rules/${r.id}`, { effect: { url: 'https://example.invalid/b', retry: { maxAttempts: 4 } } })
    assert.equal(p.status, 200, p.text)
    assert.deepEqual(p.body.effect, { type: 'webhook', url: 'https://example.invalid/b', headers: { 'X-Team': 'field' }, body: { pole: '{{payload.id}}' }, retry: { maxAttempts: 4 } })
    const dropped = await owner.patch(`/v1/automation/rules/${r.id}`, { effect: { headers: null } })
    assert.equal(dropped.status, 200, dropped.text)
    assert.equal(dropped.body.effect.headers, undefined)
    assert.equal(dropped.body.effect.url, 'https://example.invalid/b')
    assert.equal((await owner.patch(`/v1/automation/rules/${r.id}`, { trigger: { slug: 'merged-2' } })).body.trigger.slug, 'merged-2')
    const other = await owner.patch(`/v1/automation/rules/${r.id}`, { effect: { type: 'object.update', objectId: '{{payload.id}}', attributes: { seen: true } } })
    assert.equal(other.status, 200, other.text)
    assert.deepEqual(other.body.effect, { type: 'object.update', objectId: '{{payload.id}}', attributes: { seen: true } })
    const bad = await owner.patch(`/v1/automation/rules/${r.id}`, { effect: { type: 'webhook' } })
    assert.equal(bad.status, 400, 'a webhook effect without url')
  })

  it('ingress: 401 for a wrong or missing token or one of another rule, 404 for an unknown slug or a draft rule, 202 with runIds', async () => {
    const r = await create(webhookRule('ingress'))
    const other = await create(webhookRule('ingress-other'))
    assert.equal((await s.request('POST', '/v1/automation/triggers/ingress', { token: r.webhookToken, body: {} })).status, 404, 'a draft rule')
    await owner.post(`/v1/automation/rules/${r.id}/publish`, { to: 'sandbox' })
    assert.equal((await s.request('POST', '/v1/automation/triggers/ingress', { body: {} })).status, 401)
    const wrong = await s.request('POST', '/v1/automation/triggers/ingress', { token: r.webhookToken.slice(0, -2) + 'xx', body: {} })
    assert.equal(wrong.status, 401)
    assert.equal((await s.request('POST', '/v1/automation/triggers/ingress', { token: 'garbage', body: {} })).status, 401)
    assert.equal((await s.request('POST', '/v1/automation/triggers/nope', { token: r.webhookToken, body: {} })).status, 404, 'an unknown slug')
    // A valid token of another rule, judged in the tenant the token names: that tenant has a live
    // rule with the slug, so it is a bad token for it (401, the same body as a wrong token) ...
    const foreign = await s.request('POST', '/v1/automation/triggers/ingress', { token: other.webhookToken, body: {} })
    assert.equal(foreign.status, 401, "another rule's token, on a slug its tenant has live")
    assert.deepEqual(foreign.body, wrong.body)
    // ... and where the tenant has no live rule with the slug (unknown, or only a draft's), 404.
    assert.equal((await s.request('POST', '/v1/automation/triggers/nope', { token: other.webhookToken, body: {} })).status, 404, 'a draft rule\'s token on an unknown slug')
    assert.equal((await s.request('POST', '/v1/automation/triggers/ingress-other', { token: r.webhookToken, body: {} })).status, 404, "a live rule's token on a slug only a draft has")
    const ok = await s.request('POST', '/v1/automation/triggers/ingress', { token: r.webhookToken, body: { a: 1 }, headers: { 'Idempotency-Key': 'delivery-42' } })
    assert.equal(ok.status, 202, ok.text)
    const again = await s.request('POST', '/v1/automation/triggers/ingress', { token: r.webhookToken, body: { a: 1 }, headers: { 'Idempotency-Key': 'delivery-42' } })
    assert.deepEqual(again.body.runIds, ok.body.runIds, 'a retried delivery finds its run')
    // The run and its job are written by one statement: one automation.run job with the queue's
    // options, none for the retry; and the run row carries the request.
    const jobs = await s.db.raw("SELECT retry_limit, expire_seconds, state FROM pgboss.job WHERE name = 'automation.run' AND data->>'runId' = ?", [ok.body.runIds[0]])
    assert.deepEqual(jobs.rows, [{ retry_limit: 5, expire_seconds: 15, state: 'created' }])
    const run = await s.db('automation_runs').where({ id: ok.body.runIds[0] }).first()
    assert.deepEqual([run.status, run.trigger_key, run.input], ['queued', 'webhook:delivery-42', { a: 1 }])
    assert.equal((await s.request('POST', '/v1/automation/triggers/ingress', { token: r.webhookToken, raw: '[1]', headers: { 'Content-Type': 'application/json' } })).status, 400)
  })

  it('rotate-token: the old token stops working, the new one works', async () => {
    const r = await create(webhookRule('rotate'))
    await owner.post(`/v1/automation/rules/${r.id}/publish`)
    const rot = await owner.post(`/v1/automation/rules/${r.id}/rotate-token`)
    assert.equal(rot.status, 200, rot.text)
    assert.notEqual(rot.body.webhookToken, r.webhookToken)
    assert.notEqual(rot.body.signingSecret, r.signingSecret)
    assert.equal((await s.request('POST', '/v1/automation/triggers/rotate', { token: r.webhookToken, body: {} })).status, 401)
    assert.equal((await s.request('POST', '/v1/automation/triggers/rotate', { token: rot.body.webhookToken, body: {} })).status, 202)
  })

  it('deactivate returns a rule to draft and delete removes it', async () => {
    const r = await create(webhookRule('gone'))
    await owner.post(`/v1/automation/rules/${r.id}/publish`)
    const d = await owner.post(`/v1/automation/rules/${r.id}/deactivate`)
    assert.equal(d.body.status, 'draft')
    assert.equal((await s.request('POST', '/v1/automation/triggers/gone', { token: r.webhookToken, body: {} })).status, 404)
    assert.equal((await owner.delete(`/v1/automation/rules/${r.id}`)).status, 204)
    assert.equal((await owner.get(`/v1/automation/rules/${r.id}`)).status, 404)
    await create(webhookRule('gone'))
  })

  it('keeps tenants apart: rules, runs and ingress', async () => {
    const r = await create(webhookRule('mine'))
    await owner.post(`/v1/automation/rules/${r.id}/publish`)
    await s.request('POST', '/v1/automation/triggers/mine', { token: r.webhookToken, body: {} })
    const runId = (await owner.get(`/v1/automation/rules/${r.id}/runs`)).body.items[0].id
    const stranger = s.as(newTenant('auto-api'), ['owner'])
    assert.equal((await stranger.get(`/v1/automation/rules/${r.id}`)).status, 404)
    assert.equal((await stranger.get(`/v1/automation/rules/${r.id}/runs`)).status, 404)
    assert.equal((await stranger.get(`/v1/automation/rules/${r.id}/runs/${runId}`)).status, 404)
    assert.equal((await stranger.patch(`/v1/automation/rules/${r.id}`, { name: 'mine now' })).status, 404)
    assert.equal((await stranger.get('/v1/automation/rules')).body.pagination.total, 0)
    const theirs = (await stranger.post('/v1/automation/rules', webhookRule('mine'))).body
    await stranger.post(`/v1/automation/rules/${theirs.id}/publish`)
    const i = await s.request('POST', '/v1/automation/triggers/mine', { token: theirs.webhookToken, body: {} })
    assert.equal(i.status, 202)
    assert.equal((await owner.get(`/v1/automation/rules/${r.id}/runs`)).body.pagination.total, 1, "the other tenant's call ran the other tenant's rule")
    // A valid token of this tenant on a slug only the other tenant has live: 404, as for any slug
    // this tenant lacks (a token never reveals another tenant's slugs).
    const only = (await stranger.post('/v1/automation/rules', webhookRule('theirs-only'))).body
    await stranger.post(`/v1/automation/rules/${only.id}/publish`)
    const probe = await s.request('POST', '/v1/automation/triggers/theirs-only', { token: r.webhookToken, body: {} })
    assert.equal(probe.status, 404, probe.text)
    assert.equal(probe.body.error.code, 'NOT_FOUND')
  })

  it('permissions: operators read, viewers see nothing, flush needs automationRules:execute', async () => {
    const r = await create(webhookRule('perm'))
    const operator = s.as(tenant, ['operator'])
    const viewer = s.as(tenant, ['viewer'])
    assert.equal((await operator.get(`/v1/automation/rules/${r.id}`)).status, 200)
    assert.equal((await operator.post('/v1/automation/rules', webhookRule('perm2'))).status, 403)
    assert.equal((await operator.post(`/v1/automation/rules/${r.id}/publish`)).status, 403)
    assert.equal((await viewer.get('/v1/automation/rules')).status, 403)
    assert.equal((await operator.post('/v1/outbox/flush')).status, 403)
    const flush = await owner.post('/v1/outbox/flush')
    assert.equal(flush.status, 200, flush.text)
    assert.deepEqual(Object.keys(flush.body).sort(), ['delivered', 'failed', 'pending'])
    assert.equal(flush.body.pending, 0)
  })

  it('runs list filters by status and time, and 404s an unknown run', async () => {
    const r = await create(webhookRule('filters'))
    await owner.post(`/v1/automation/rules/${r.id}/publish`)
    const before = new Date().toISOString()
    await s.request('POST', '/v1/automation/triggers/filters', { token: r.webhookToken, body: {} })
    assert.equal((await owner.get(`/v1/automation/rules/${r.id}/runs?status=queued`)).body.pagination.total, 1)
    assert.equal((await owner.get(`/v1/automation/rules/${r.id}/runs?status=failed`)).body.pagination.total, 0)
    assert.equal((await owner.get(`/v1/automation/rules/${r.id}/runs?from=${encodeURIComponent(before)}`)).body.pagination.total, 1)
    assert.equal((await owner.get(`/v1/automation/rules/${r.id}/runs?to=${encodeURIComponent(before)}`)).body.pagination.total, 0)
    assert.equal((await owner.get(`/v1/automation/rules/${r.id}/runs?status=bogus`)).status, 400)
    assert.equal((await owner.get(`/v1/automation/rules/${r.id}/runs/00000000-0000-4000-8000-000000000000`)).status, 404)
  })
})

describe('POST /v1/automation/triggers/{slug} under a license', () => {
  let s: TestServer
  let issuer: Issuer
  before(async () => {
    issuer = newIssuer()
    s = await startServer({ LICENSE_PUBLIC_KEY: issuer.publicKey, LICENSE_STORAGE_SECRET: 'automation-ingress-license-storage-secret-0123' }, { jobs: true })
  })
  after(async () => { await s.close() })

  it('answers 403 FEATURE_DISABLED once the license switches automation off (after the token check), and queues nothing', async () => {
    const tenant = newTenant('autolic')
    const owner = s.as(tenant, ['owner'])
    const install = (features: Record<string, boolean>) => owner.post('/v1/license', { licenseKey: issuer.sign({ tenant, exp: inDays(365), features }) })
    assert.equal((await install({})).status, 200)
    const rule = await owner.post('/v1/automation/rules', { name: 'r', trigger: { type: 'webhook', slug: 'lic' }, effect: { type: 'webhook', url: 'https://example.com/hook' } })
    assert.equal(rule.status, 201, rule.text)
    assert.equal((await owner.post(`/v1/automation/rules/${rule.body.id}/publish`)).status, 200)
    assert.equal((await s.request('POST', '/v1/automation/triggers/lic', { token: rule.body.webhookToken, body: {} })).status, 202)

    assert.equal((await install({ automation: false })).status, 200)
    const off = await s.request<any>('POST', '/v1/automation/triggers/lic', { token: rule.body.webhookToken, body: {} })
    assert.equal(off.status, 403, off.text)
    assert.equal(off.body.error.code, 'FEATURE_DISABLED')
    assert.equal(off.body.error.details.feature, 'automation')
    assert.equal((await s.request('POST', '/v1/automation/triggers/lic', { token: `${rule.body.webhookToken}x`, body: {} })).status, 401, 'a bad token is still 401')
    const runs = await s.db.raw('SELECT count(*)::int AS n FROM automation_runs WHERE tenant_id = ?', [tenant])
    assert.equal(runs.rows[0].n, 1, 'only the call made while automation was on queued a run')

    assert.equal((await install({ automation: true })).status, 200)
    assert.equal((await s.request('POST', '/v1/automation/triggers/lic', { token: rule.body.webhookToken, body: {} })).status, 202)
  })
})
