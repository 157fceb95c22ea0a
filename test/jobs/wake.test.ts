import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startServer, newTenant, publishedType, type TestServer, type Client } from '../support/harness.js'
import { activeRule, finishedRun, scratchDatabase, useReceivers, startWorker, stopAllWorkers, waitUntil } from '../support/automation.js'

// Queued jobs are announced to the workers when they commit (lib/queues announceQueued, worker/start.ts),
// so a worker starts them at once. The worker here looks for jobs on its own only every 300 s
// (WORKER_POLL_SECONDS): whatever it does within seconds it was told of. Each case first leaves
// the worker idle, its loops resting.

const IDLE_MS = 1500
const SOON_MS = 5000

describe('workers woken by announced jobs, not by their polls', { timeout: 300_000 }, () => {
  let s: TestServer
  let c: Client
  const receiver = useReceivers()
  let database: Awaited<ReturnType<typeof scratchDatabase>>
  const idle = () => new Promise(resolve => setTimeout(resolve, IDLE_MS))

  before(async () => {
    database = await scratchDatabase()
    s = await startServer({ DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { jobs: true })
    await startWorker({ DATABASE_URL: database.url, WORKER_POLL_SECONDS: '300' })
    c = s.as(newTenant('wake'), ['owner'])
  })
  after(async () => {
    await stopAllWorkers()
    await s?.close()
    await database?.drop()
  })

  async function trigger (slug: string, token: string, body: unknown): Promise<string> {
    const res = await s.request('POST', `/v1/automation/triggers/${slug}`, { token, body })
    assert.equal(res.status, 202, res.text)
    return res.body.runIds[0]
  }

  it('runs a webhook trigger\'s run (queued by the API) within seconds, each time', async () => {
    const typeId = await publishedType(c)
    const o = (await c.post('/v1/objects', { typeId })).body
    const rule = await activeRule(c, {
      trigger: { type: 'webhook', slug: `wake-${randomUUID().slice(0, 8)}` },
      effect: { type: 'object.update', objectId: '{{payload.objectId}}', attributes: { name: '{{payload.name}}' } }
    })
    for (const name of ['first', 'second']) {
      await idle()
      const started = performance.now()
      const run = await finishedRun(c, rule.id, await trigger(rule.trigger.slug, rule.webhookToken, { objectId: o.id, name }), SOON_MS)
      assert.equal(run.status, 'succeeded', JSON.stringify(run))
      assert.ok(performance.now() - started < SOON_MS)
      assert.equal((await c.get(`/v1/objects/${o.id}`)).body.attributes.name, name)
    }
  })

  it('takes an object event through dispatch, run and delivery, each woken by the one before', async () => {
    const typeId = await publishedType(c)
    const r = await receiver()
    await activeRule(c, { trigger: { type: 'object.event', events: ['object.created'], typeId }, effect: { type: 'webhook', url: r.url, body: { id: '{{object.id}}' } } })
    await idle()
    const o = (await c.post('/v1/objects', { typeId })).body
    await waitUntil(() => r.received.length >= 1, SOON_MS, 'the webhook call')
    assert.equal(JSON.parse(r.received[0].body.toString()).id, o.id)
  })

  it('makes a retry of a failing receiver when it is due, woken by the worker that queued it', async () => {
    const r = await receiver({ status: 503 }, { status: 200 })
    const rule = await activeRule(c, { trigger: { type: 'webhook', slug: `retry-${randomUUID().slice(0, 8)}` }, effect: { type: 'webhook', url: r.url, body: {} } })
    await idle()
    const run = await finishedRun(c, rule.id, await trigger(rule.trigger.slug, rule.webhookToken, {}), SOON_MS)
    assert.equal(run.status, 'succeeded', JSON.stringify(run))
    assert.equal(run.attempts, 2)
  })

  it('brings a schedule rule\'s pg-boss schedule in line once the rule is published', async () => {
    const r = await receiver()
    await idle()
    const rule = await activeRule(c, { trigger: { type: 'schedule', cron: '0 3 * * *' }, effect: { type: 'webhook', url: r.url, body: {} } })
    await waitUntil(async () => (await s.db.raw("SELECT count(*)::int AS n FROM pgboss.schedule WHERE name = 'automation.tick' AND key = ?", [rule.id])).rows[0].n === 1, SOON_MS, 'the schedule')
  })
})
