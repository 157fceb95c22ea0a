import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startServer, newTenant, publishedType, flushAudit, type TestServer, type Client } from '../support/harness.js'
import { scratchDatabase, useReceivers, startWorker, stopAllWorkers, waitUntil } from '../support/automation.js'
import { inDays, newIssuer, type Issuer } from '../support/license.js'

// The license over automation runs (docs/behaviour.md "Licensing", SPEC 6), end to end: the real API
// (ingress, REST, license installs) and a real worker process on a database of their own, both
// reading the tenant's installed license (the same public key and storage secret), and a local
// receiver on 127.0.0.1 for webhook effects.

const SECRET = 'automation-license-storage-secret-0123456789'

describe('automation runs under a license', { timeout: 600_000 }, () => {
  let issuer: Issuer
  let s: TestServer
  const receiver = useReceivers()
  let database: Awaited<ReturnType<typeof scratchDatabase>>

  before(async () => {
    issuer = newIssuer()
    database = await scratchDatabase()
    const env = { DATABASE_URL: database.url, LICENSE_PUBLIC_KEY: issuer.publicKey, LICENSE_STORAGE_SECRET: SECRET, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }
    s = await startServer(env, { jobs: true })
    await startWorker(env)
  })
  after(async () => {
    await stopAllWorkers()
    await s?.close()
    await database?.drop()
  })

  async function install (c: Client, tenant: string, claims: Record<string, unknown>): Promise<void> {
    const res = await c.post('/v1/license', { licenseKey: issuer.sign({ tenant, ...claims }) })
    assert.equal(res.status, 200, res.text)
  }

  async function licensed (limits: Record<string, number> = {}): Promise<{ tenant: string, c: Client }> {
    const tenant = newTenant('autolic')
    const c = s.as(tenant, ['owner'])
    await install(c, tenant, { exp: inDays(365), limits })
    return { tenant, c }
  }

  async function rule (c: Client, to: 'active' | 'sandbox', body: Record<string, unknown>): Promise<Record<string, any>> {
    const r = await c.post('/v1/automation/rules', { name: 'rule', ...body })
    assert.equal(r.status, 201, r.text)
    const p = await c.post(`/v1/automation/rules/${r.body.id}/publish`, { to })
    assert.equal(p.status, 200, p.text)
    return r.body
  }

  async function trigger (r: Record<string, any>, body: unknown): Promise<string> {
    const res = await s.request('POST', `/v1/automation/triggers/${r.trigger.slug}`, { token: r.webhookToken, body })
    assert.equal(res.status, 202, res.text)
    return res.body.runIds[0]
  }

  async function finished (c: Client, r: Record<string, any>, runId: string): Promise<Record<string, any>> {
    return waitUntil(async () => {
      const res = await c.get(`/v1/automation/rules/${r.id}/runs/${runId}`)
      return res.status === 200 && !['queued', 'running'].includes(res.body.status) ? res.body : null
    }, 60_000, `run ${runId} to finish`)
  }

  const runOf = async (c: Client, r: Record<string, any>, body: unknown) => finished(c, r, await trigger(r, body))
  const usage = async (c: Client): Promise<number> => (await c.get('/v1/license')).body.usage.workflow_run_count

  it('workflow_run_count 2: a transition and a retried webhook count one each; the next effects are refused LICENSE_LIMIT_EXCEEDED, audited, and apply nothing', async () => {
    const { tenant, c } = await licensed({ workflow_run_count: 2 })
    const wf = await c.post('/v1/workflows', {
      key: `wf_${randomUUID().slice(0, 8)}`, name: 'Review', initialState: 'draft',
      states: [{ name: 'draft' }, { name: 'review' }],
      transitions: [{ from: ['draft'], targetState: 'review' }, { from: '*', targetState: 'draft' }]
    })
    assert.equal(wf.status, 201, wf.text)
    const typeId = await publishedType(c, { workflowId: wf.body.id })
    const o = (await c.post('/v1/objects', { typeId, attributes: { height: 0 } })).body
    const r = await receiver({ status: 500 }, { status: 200 })
    const move = await rule(c, 'active', { trigger: { type: 'webhook', slug: 'move' }, effect: { type: 'workflow.transition', targetState: 'review', objectId: '{{payload.id}}' } })
    const back = await rule(c, 'active', { trigger: { type: 'webhook', slug: 'back' }, effect: { type: 'workflow.transition', targetState: 'draft', objectId: '{{payload.id}}' } })
    const touch = await rule(c, 'active', {
      trigger: { type: 'webhook', slug: 'touch' },
      condition: { '>': [{ var: 'h' }, 0] },
      effect: { type: 'object.update', objectId: '{{payload.id}}', attributes: { height: '{{payload.h}}' } }
    })
    const call = await rule(c, 'active', { trigger: { type: 'webhook', slug: 'call' }, effect: { type: 'webhook', url: r.url, body: { n: '{{payload.n}}' }, retry: { maxAttempts: 3, backoff: 'exponential' } } })
    const dry = await rule(c, 'sandbox', { trigger: { type: 'webhook', slug: 'dry' }, effect: { type: 'object.update', objectId: '{{payload.id}}', attributes: { height: 9 } } })

    // A dry run and a skipped run apply no effect and count nothing.
    assert.equal((await runOf(c, dry, { id: o.id })).status, 'dry_run')
    assert.equal((await runOf(c, touch, { id: o.id, h: 0 })).status, 'skipped')
    assert.equal(await usage(c), 0)
    // A transition effect counts once (its own write names the limit; the run adds nothing).
    const moved = await runOf(c, move, { id: o.id })
    assert.equal(moved.status, 'succeeded', JSON.stringify(moved))
    assert.equal(await usage(c), 1)
    // A webhook effect counts once per run, not per attempt.
    const called = await runOf(c, call, { n: 1 })
    assert.equal(called.status, 'succeeded', JSON.stringify(called))
    assert.equal(called.attempts, 2)
    assert.equal(await usage(c), 2)

    // At the limit: an object.update, a webhook and a transition effect are each refused.
    const version = (await c.get(`/v1/objects/${o.id}`)).body.version
    const refused = [await runOf(c, touch, { id: o.id, h: 5 }), await runOf(c, call, { n: 2 }), await runOf(c, back, { id: o.id })]
    for (const run of refused) {
      assert.equal(run.status, 'failed', JSON.stringify(run))
      assert.equal(run.error.code, 'LICENSE_LIMIT_EXCEEDED', JSON.stringify(run))
    }
    assert.equal(refused[1].attempts, 0)
    assert.equal(r.received.length, 2, 'the refused webhook effect sent nothing')
    const now = (await c.get(`/v1/objects/${o.id}`)).body
    assert.deepEqual([now.version, now.attributes.height, now.workflowState], [version, 0, 'review'], 'the refused effects changed nothing')
    assert.equal(await usage(c), 2)

    await flushAudit(s.db, tenant)
    const events = (await c.get('/v1/audit/events?type=license.limit_exceeded')).body.items as Array<Record<string, any>>
    assert.equal(events.length, 3, JSON.stringify(events))
    assert.deepEqual(new Set(events.map(e => e.actor.sub)), new Set([touch, call, back].map(x => `automation:${x.id}`)))
    for (const e of events) assert.deepEqual(e.data, { limitCode: 'workflow_run_count', limit: 2, current: 2 })
    const proof = (await c.get(`/v1/audit/events/${events[0].id}/proof`)).body
    assert.equal(proof.valid, true, 'the refusals are links of the tenant\'s chain')
  })

  it('an expired license: the ingress answers 202, the webhook-effect run fails LICENSE_EXPIRED and the receiver gets no request', async () => {
    const { tenant, c } = await licensed()
    const r = await receiver()
    const call = await rule(c, 'active', { trigger: { type: 'webhook', slug: 'call' }, effect: { type: 'webhook', url: r.url, body: { n: 1 } } })
    await install(c, tenant, { exp: inDays(-1) })
    const run = await runOf(c, call, {})
    assert.equal(run.status, 'failed', JSON.stringify(run))
    assert.equal(run.error.code, 'LICENSE_EXPIRED')
    assert.equal(run.attempts, 0)
    assert.equal(r.received.length, 0)
    assert.equal(await usage(c), 0)
  })

  it('a license that expires between attempts: the retry is not sent and the run fails LICENSE_EXPIRED', async () => {
    const { tenant, c } = await licensed()
    // The first attempt hangs until WEBHOOK_TIMEOUT_SECONDS (2 s); the retry would follow 1 s later.
    const r = await receiver('hang', { status: 200 })
    const call = await rule(c, 'active', { trigger: { type: 'webhook', slug: 'call' }, effect: { type: 'webhook', url: r.url, body: { n: 1 }, retry: { maxAttempts: 3, backoff: 'exponential' } } })
    const runId = await trigger(call, {})
    await waitUntil(() => r.received.length >= 1, 60_000, 'the first attempt')
    await install(c, tenant, { exp: inDays(-1) })
    const run = await finished(c, call, runId)
    assert.equal(run.status, 'failed', JSON.stringify(run))
    assert.equal(run.error.code, 'LICENSE_EXPIRED')
    assert.equal(run.attempts, 1)
    assert.equal(r.received.length, 1, 'no request after the license expired')
  })
})
