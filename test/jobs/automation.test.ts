import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createHmac, randomUUID } from 'node:crypto'
import pg from 'pg'
import { startServer, newTenant, publishedType, flushAudit, type TestServer, type Client } from '../support/harness.js'
import { activeRule, finishedRun, scratchDatabase, useReceivers, startWorker as startWorkerOn, stopAllWorkers, waitUntil, type WorkerProcess } from '../support/automation.js'
import { MAX_CAUSATION_DEPTH } from '../../lib/automation/index.js'

// The engine end to end: the real API (ingress and REST), two real worker processes
// (node --import tsx worker/main.ts) on a database of their own, and a local receiver on 127.0.0.1.

const zone = { type: 'Polygon', coordinates: [[[13, 52], [14, 52], [14, 53], [13, 53], [13, 52]]] }

function reviewWorkflow () {
  return {
    key: `wf_${randomUUID().slice(0, 8)}`, name: 'Review', initialState: 'draft',
    states: [{ name: 'draft' }, { name: 'review' }, { name: 'approved', final: true }],
    transitions: [{ from: ['draft'], targetState: 'review' }, { from: '*', targetState: 'draft' }]
  }
}

describe('automation engine with worker processes', { timeout: 900_000 }, () => {
  let s: TestServer
  let workers: WorkerProcess[] = []
  const receiver = useReceivers()
  let database: Awaited<ReturnType<typeof scratchDatabase>>
  const startWorker = () => startWorkerOn({ DATABASE_URL: database.url, WORKER_METRICS_PORT: '0' })

  before(async () => {
    database = await scratchDatabase()
    // The receivers listen on 127.0.0.1: the API takes rules naming it, as the workers call it.
    s = await startServer({ DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { jobs: true })
    workers = await Promise.all([startWorker(), startWorker()])
  })
  after(async () => {
    await stopAllWorkers()
    await s?.close()
    await database?.drop()
  })

  async function setup (): Promise<{ c: Client, typeId: string }> {
    const c = s.as(newTenant('auto'), ['owner'])
    const wf = await c.post('/v1/workflows', reviewWorkflow())
    assert.equal(wf.status, 201, wf.text)
    return { c, typeId: await publishedType(c, { workflowId: wf.body.id }) }
  }

  async function flushAuditOf (c: Client): Promise<void> {
    await flushAudit(s.db, (await c.get('/v1/auth/me')).body.tenant)
  }

  async function trigger (slug: string, token: string, body: unknown): Promise<string> {
    const res = await s.request('POST', `/v1/automation/triggers/${slug}`, { token, body })
    assert.equal(res.status, 202, res.text)
    assert.equal(res.body.accepted, true)
    return res.body.runIds[0]
  }

  it('a webhook trigger transitions an object through the workflow, as the rule', async () => {
    const { c, typeId } = await setup()
    const o = (await c.post('/v1/objects', { typeId })).body
    const rule = await activeRule(c, {
      trigger: { type: 'webhook', slug: 'arrive' },
      match: { type: 'attribute', path: '$.kind', operator: 'equals', value: 'arrived' },
      effect: { type: 'workflow.transition', targetState: 'review', objectId: '{{payload.objectId}}' }
    })
    const runId = await trigger('arrive', rule.webhookToken, { kind: 'arrived', objectId: o.id })
    const run = await finishedRun(c, rule.id, runId)
    assert.equal(run.status, 'succeeded', JSON.stringify(run))
    assert.equal(run.matched, true)
    assert.deepEqual(run.steps.map((x: { phase: string }) => x.phase), ['match', 'effect'])
    const now = (await c.get(`/v1/objects/${o.id}`)).body
    assert.equal(now.workflowState, 'review')
    const history = (await c.get(`/v1/objects/${o.id}/history`)).body.items
    assert.equal(history.at(-1).actor.sub, `automation:${rule.id}`)
    const metrics = (await s.request('GET', '/metrics')).text
    assert.match(metrics, new RegExp(`automation_rules_executed_total\\{rule_id="${rule.id}"\\} 1\\b`))
    assert.match(metrics, /job_queue_depth\{queue="automation.run",state="created"\} \d+/)
    assert.match(metrics, /job_latency_seconds_count\{queue="automation.run"\} [1-9]/)
    // The transition happened in a worker: counted on the workers' own /metrics (WORKER_METRICS_PORT).
    const workflowId = (await c.get(`/v1/object-types/${typeId}`)).body.workflowId
    let transitions = 0
    for (const w of workers) {
      const line = w.output().split('\n').find(l => l.includes('worker metrics listening'))
      assert.ok(line, 'every worker serves /metrics')
      const text = await (await fetch(`http://127.0.0.1:${JSON.parse(line).port}/metrics`)).text()
      const m = new RegExp(`workflow_transitions_total\\{workflow_id="${workflowId}",state="review"\\} (\\d+)`).exec(text)
      transitions += m === null ? 0 : Number(m[1])
    }
    assert.equal(transitions, 1)
    await flushAuditOf(c)
    const audit = (await c.get(`/v1/audit/events?type=automation.executed&resourceId=${rule.id}`)).body.items
    assert.equal(audit.length, 1)
    assert.equal(audit[0].data.runId, runId)
  })

  it('geofencing: a position inside the zone transitions the object, one outside is skipped with conditionResult false', async () => {
    const { c, typeId } = await setup()
    const inside = (await c.post('/v1/objects', { typeId })).body
    const outside = (await c.post('/v1/objects', { typeId })).body
    const rule = await activeRule(c, {
      trigger: { type: 'webhook', slug: 'position' },
      condition: { geoWithin: [{ var: 'position' }, zone] },
      effect: { type: 'workflow.transition', targetState: 'review', objectId: '{{payload.vehicle}}' }
    })
    const inRun = await finishedRun(c, rule.id, await trigger('position', rule.webhookToken, { vehicle: inside.id, position: { type: 'Point', coordinates: [13.4, 52.5] } }))
    const outRun = await finishedRun(c, rule.id, await trigger('position', rule.webhookToken, { vehicle: outside.id, position: { type: 'Point', coordinates: [15.1, 52.5] } }))
    assert.equal(inRun.status, 'succeeded', JSON.stringify(inRun))
    assert.equal(inRun.conditionResult, true)
    assert.equal(outRun.status, 'skipped', JSON.stringify(outRun))
    assert.equal(outRun.conditionResult, false)
    assert.equal((await c.get(`/v1/objects/${inside.id}`)).body.workflowState, 'review')
    assert.equal((await c.get(`/v1/objects/${outside.id}`)).body.workflowState, 'draft')
  })

  it('an object event calls a webhook with templates filled, signed, with Idempotency-Key and X-Webhook-Attempt', async () => {
    const { c, typeId } = await setup()
    const r = await receiver()
    const rule = await activeRule(c, {
      trigger: { type: 'object.event', events: ['object.created'], typeId },
      effect: {
        type: 'webhook', url: `${r.url}/hooks/{{object.typeId}}`, method: 'POST',
        headers: { 'X-Tenant': '{{tenant}}', Authorization: 'Bearer receiver-secret' },
        body: { id: '{{object.id}}', name: '{{object.attributes.name}}', height: '{{object.attributes.height}}', text: 'run {{run.id}} of {{rule.id}}' }
      }
    })
    const o = (await c.post('/v1/objects', { typeId, attributes: { name: 'Mast 7', height: 12.5 } })).body
    await waitUntil(() => r.received.length >= 1, 60_000, 'the webhook call')
    const got = r.received[0]
    assert.equal(got.url, `/hooks/${typeId}`)
    const body = JSON.parse(got.body.toString())
    assert.equal(body.id, o.id)
    assert.equal(body.name, 'Mast 7')
    assert.equal(body.height, 12.5, 'a whole-string template keeps the value type')
    const runId = got.headers['idempotency-key'] as string
    assert.equal(body.text, `run ${runId} of ${rule.id}`)
    assert.equal(got.headers['x-tenant'], (await c.get('/v1/auth/me')).body.tenant)
    assert.equal(got.headers['x-webhook-attempt'], '1')
    const expected = `sha256=${createHmac('sha256', rule.signingSecret).update(got.body).digest('hex')}`
    assert.equal(got.headers['x-webhook-signature'], expected)
    const run = await finishedRun(c, rule.id, runId)
    assert.equal(run.status, 'succeeded')
    assert.equal(run.trigger.event, 'object.created')
    assert.equal(run.request.headers.Authorization, '[redacted]', 'secrets are redacted in the run record')
    assert.equal(run.response.status, 200)
    assert.equal(run.attemptLog.length, 1)
  })

  it('retries a failing receiver after 1 s and 2 s: three attempts, one Idempotency-Key', async () => {
    const { c } = await setup()
    const r = await receiver({ status: 500 }, { status: 503 }, { status: 200, body: 'fine' })
    const rule = await activeRule(c, { trigger: { type: 'webhook', slug: 'retry' }, effect: { type: 'webhook', url: r.url, body: { a: 1 }, retry: { maxAttempts: 3, backoff: 'exponential' } } })
    const runId = await trigger('retry', rule.webhookToken, {})
    const run = await finishedRun(c, rule.id, runId, 90_000)
    assert.equal(run.status, 'succeeded', JSON.stringify(run))
    assert.equal(run.attempts, 3)
    assert.equal(r.received.length, 3)
    assert.deepEqual(r.received.map(x => x.headers['x-webhook-attempt']), ['1', '2', '3'])
    assert.deepEqual(new Set(r.received.map(x => x.headers['idempotency-key'])), new Set([runId]))
    const gaps = [r.received[1].at - r.received[0].at, r.received[2].at - r.received[1].at]
    assert.ok(gaps[0] >= 950, `first backoff about 1 s, got ${gaps[0]} ms`)
    assert.ok(gaps[1] >= 1950, `second backoff about 2 s, got ${gaps[1]} ms`)
    assert.deepEqual(run.attemptLog.map((a: { status: number }) => a.status), [500, 503, 200])
    assert.equal(run.response.body, 'fine')
  })

  it('records a timeout when the receiver never answers, and fails the run for good', async () => {
    const { c } = await setup()
    const r = await receiver('hang')
    const rule = await activeRule(c, { trigger: { type: 'webhook', slug: 'slow' }, effect: { type: 'webhook', url: r.url, retry: { maxAttempts: 1 } } })
    const run = await finishedRun(c, rule.id, await trigger('slow', rule.webhookToken, {}), 90_000)
    assert.equal(run.status, 'failed')
    assert.equal(run.error.code, 'WEBHOOK_FAILED')
    assert.equal(run.attemptLog.length, 1)
    assert.match(run.attemptLog[0].detail, /timed out/)
  })

  it('does not follow a redirect to a private address, and does not retry it', async () => {
    const { c } = await setup()
    const r = await receiver({ status: 302, headers: { Location: 'http://169.254.169.254/latest/meta-data/' } })
    const rule = await activeRule(c, { trigger: { type: 'webhook', slug: 'moved' }, effect: { type: 'webhook', url: r.url, retry: { maxAttempts: 3 } } })
    const run = await finishedRun(c, rule.id, await trigger('moved', rule.webhookToken, {}))
    assert.equal(run.status, 'failed')
    assert.equal(run.attempts, 1)
    assert.match(run.error.message, /redirects are not followed/)
    assert.equal(r.received.length, 1)
  })

  it('fails a run whose template names a missing value, and sends nothing', async () => {
    const { c } = await setup()
    const r = await receiver()
    const rule = await activeRule(c, { trigger: { type: 'webhook', slug: 'tmpl' }, effect: { type: 'webhook', url: r.url, body: { v: '{{payload.missing.deep}}' } } })
    const run = await finishedRun(c, rule.id, await trigger('tmpl', rule.webhookToken, { present: 1 }))
    assert.equal(run.status, 'failed')
    assert.equal(run.error.code, 'TEMPLATE_ERROR')
    assert.match(run.error.message, /\{\{payload\.missing\.deep\}\} at effect\.body\.v/)
    assert.equal(r.received.length, 0)
  })

  it(`stops a rule that triggers itself at causation depth ${MAX_CAUSATION_DEPTH}, recording why`, async () => {
    const { c, typeId } = await setup()
    const rule = await activeRule(c, {
      trigger: { type: 'object.event', events: ['object.updated'], typeId },
      effect: { type: 'object.update', attributes: { name: 'touched {{now}}' } }
    })
    const o = (await c.post('/v1/objects', { typeId })).body
    await c.patch(`/v1/objects/${o.id}`, { attributes: { name: 'start' } }, { 'If-Match': '1' })
    const stopped = await waitUntil(async () => {
      const runs = (await c.get(`/v1/automation/rules/${rule.id}/runs?status=skipped`)).body.items
      return runs.find((x: { error: { code: string } | null }) => x.error?.code === 'CAUSATION_DEPTH')
    }, 120_000, 'the stopped run')
    assert.match(stopped.error.message, /limit is 5/)
    await c.post('/v1/outbox/flush')
    const all = (await c.get(`/v1/automation/rules/${rule.id}/runs`)).body.items as Array<{ status: string }>
    assert.equal(all.filter(x => x.status === 'succeeded').length, MAX_CAUSATION_DEPTH)
    assert.equal(all.length, MAX_CAUSATION_DEPTH + 1)
    assert.equal((await c.get(`/v1/objects/${o.id}`)).body.version, 2 + MAX_CAUSATION_DEPTH)
  })

  it('with two workers on one queue, every run executes once', async () => {
    const { c } = await setup()
    const r = await receiver()
    const rule = await activeRule(c, { trigger: { type: 'webhook', slug: 'many' }, effect: { type: 'webhook', url: r.url, body: { n: '{{payload.n}}' } } })
    const ids = await Promise.all(Array.from({ length: 30 }, (_, n) => trigger('many', rule.webhookToken, { n })))
    await waitUntil(async () => (await c.get(`/v1/automation/rules/${rule.id}/runs?status=succeeded`)).body.pagination.total === 30, 120_000, '30 runs')
    assert.equal(r.received.length, 30)
    assert.deepEqual(new Set(r.received.map(x => x.headers['idempotency-key'])), new Set(ids))
    assert.deepEqual(new Set(r.received.map(x => JSON.parse(x.body.toString()).n)).size, 30)
  })

  it('a failed run for good emits automation.run.failed, which another rule routes to a webhook; replay makes a linked run', async () => {
    const { c } = await setup()
    const dead = await receiver()
    const failing = await activeRule(c, { trigger: { type: 'webhook', slug: 'fails' }, effect: { type: 'webhook', url: `${dead.url}/never`, body: { x: '{{payload.nope}}' } } })
    const router = await activeRule(c, {
      trigger: { type: 'object.event', events: ['automation.run.failed'] },
      effect: { type: 'webhook', url: `${dead.url}/dead-letters`, body: { rule: '{{payload.rule.id}}', run: '{{payload.run.id}}', error: '{{payload.error.message}}' } }
    })
    const runId = await trigger('fails', failing.webhookToken, {})
    assert.equal((await finishedRun(c, failing.id, runId)).status, 'failed')
    await waitUntil(() => dead.received.length >= 1, 60_000, 'the dead letter')
    const letter = JSON.parse(dead.received[0].body.toString())
    assert.equal(dead.received[0].url, '/dead-letters')
    assert.deepEqual([letter.rule, letter.run], [failing.id, runId])
    assert.match(letter.error, /payload\.nope/)
    assert.ok(router.id)
    const replay = await c.post(`/v1/automation/rules/${failing.id}/runs/${runId}/replay`)
    assert.equal(replay.status, 202, replay.text)
    assert.equal(replay.body.replayOf, runId)
    assert.notEqual(replay.body.id, runId)
    assert.equal((await finishedRun(c, failing.id, replay.body.id)).status, 'failed')
    const again = await c.post(`/v1/automation/rules/${failing.id}/runs/${replay.body.id}/replay`)
    assert.equal(again.status, 202)
    const ok = await c.post(`/v1/automation/rules/${router.id}/runs/${(await c.get(`/v1/automation/rules/${router.id}/runs`)).body.items[0].id}/replay`)
    assert.equal(ok.status, 409, 'only failed runs replay')
  })

  it('a schedule fires once per tick across three workers, and deactivating removes it', async () => {
    workers.push(await startWorker())
    const { c } = await setup()
    const r = await receiver()
    // Every minute, the shortest period a schedule may have (lib/automation/definition.ts).
    const rule = await activeRule(c, { trigger: { type: 'schedule', cron: '* * * * *', timezone: 'Europe/Berlin' }, effect: { type: 'webhook', url: r.url, body: { at: '{{payload.scheduledAt}}' } } })
    const runsOf = async () => (await c.get(`/v1/automation/rules/${rule.id}/runs?limit=1000`)).body.items as Array<Record<string, any>>
    // A tick of the current minute within the scheduler's 30 s pass, the next minute's within the next.
    await waitUntil(async () => new Set((await runsOf()).filter(x => x.status === 'succeeded').map(x => x.trigger.scheduledAt)).size >= 2, 180_000, 'two ticks run')
    const schedules = await s.db.raw("SELECT key FROM pgboss.schedule WHERE name = 'automation.tick' AND key = ?", [rule.id])
    assert.equal(schedules.rows.length, 1, 'one schedule, keyed by the rule id')
    const d = await c.post(`/v1/automation/rules/${rule.id}/deactivate`)
    assert.equal(d.status, 200)
    await waitUntil(async () => (await s.db.raw("SELECT count(*)::int AS n FROM pgboss.schedule WHERE name = 'automation.tick' AND key = ?", [rule.id])).rows[0].n === 0, 60_000, 'the schedule to go')
    await waitUntil(async () => (await runsOf()).every(x => !['queued', 'running'].includes(x.status)), 60_000, 'the runs to finish')
    // pg-boss files each occurrence once in its minute's slot (a send-it job, whichever worker's
    // scheduler found it), and that sends one tick job: as many tick jobs as slots, one run per tick job.
    const slots = (await s.db.raw("SELECT data->>'slot' AS slot FROM pgboss.job WHERE name = '__pgboss__send-it' AND data->>'name' = 'automation.tick' AND data->>'key' = ?", [rule.id])).rows as Array<{ slot: string }>
    const jobs = (await s.db.raw("SELECT id FROM pgboss.job WHERE name = 'automation.tick' AND data->>'ruleId' = ?", [rule.id])).rows as Array<{ id: string }>
    assert.ok(slots.length >= 2, `two occurrences or more, got ${slots.length}`)
    assert.equal(new Set(slots.map(x => x.slot)).size, slots.length, 'each occurrence filed once')
    assert.equal(jobs.length, slots.length, 'one tick job per occurrence')
    const runs = await runsOf()
    assert.deepEqual(runs.map(x => x.trigger.tickId).sort(), jobs.map(j => j.id).sort(), 'one run per tick job')
    // A tick filed just before the deactivation runs after it: skipped, the rule no longer live.
    const late = (x: Record<string, any>) => x.status === 'skipped' && x.error?.code === 'RULE_NOT_LIVE'
    assert.deepEqual(runs.filter(x => x.status !== 'succeeded' && !late(x)), [])
    const done = runs.filter(x => x.status === 'succeeded')
    assert.ok(done.length >= 2, `two ticks run, got ${done.length}`)
    const sent = r.received.map(x => JSON.parse(x.body.toString()).at)
    assert.deepEqual(sent.sort(), done.map(x => x.trigger.scheduledAt).sort(), 'every run delivered once')
  })

  it('the rule acts with the tenant policy: narrowing its publisher role makes the effect fail FORBIDDEN, readably', async () => {
    const tenant = newTenant('auto')
    const owner = s.as(tenant, ['owner'])
    const admin = s.as(tenant, ['admin'], 'publisher')
    const typeId = await publishedType(owner)
    const o = (await owner.post('/v1/objects', { typeId, attributes: { height: 0 } })).body
    const created = await admin.post('/v1/automation/rules', { name: 'policy', trigger: { type: 'webhook', slug: 'policy' }, effect: { type: 'object.update', objectId: '{{payload.id}}', attributes: { height: '{{payload.h}}' } } })
    assert.equal(created.status, 201, created.text)
    assert.equal((await admin.post(`/v1/automation/rules/${created.body.id}/publish`, { to: 'active' })).status, 200)
    const first = await finishedRun(owner, created.body.id, await trigger('policy', created.body.webhookToken, { id: o.id, h: 1 }))
    assert.equal(first.status, 'succeeded', JSON.stringify(first))
    // The workers have the tenant's policy cached now; the PUT's NOTIFY must reach them.
    const put = await owner.put('/v1/permissions/policy', { roles: { admin: { objects: ['read'], automationRules: ['read', 'write', 'publish', 'execute'] } } })
    assert.equal(put.status, 200, put.text)
    const second = await finishedRun(owner, created.body.id, await trigger('policy', created.body.webhookToken, { id: o.id, h: 2 }))
    assert.equal(second.status, 'failed', JSON.stringify(second))
    assert.equal(second.error.code, 'FORBIDDEN')
    assert.match(second.error.message, /objects:write/)
    assert.equal((await owner.get(`/v1/objects/${o.id}`)).body.attributes.height, 1, 'the refused effect changed nothing')
    // The denial is audited as the API's are, although the run's transaction rolled back.
    const denied = await owner.get('/v1/audit/events?type=permission.denied')
    assert.equal(denied.status, 200, denied.text)
    assert.deepEqual(denied.body.items.map((e: { actor: { sub: string }, data: { resource: string, action: string } }) => [e.actor.sub, e.data.resource, e.data.action]),
      [[`automation:${created.body.id}`, 'objects', 'write']])
  })

  it('a worker killed with SIGKILL mid-run: the job is retried and the transition is applied once', async () => {
    await Promise.all(workers.map(w => w.stop()))
    workers = []
    const { c, typeId } = await setup()
    const o = (await c.post('/v1/objects', { typeId })).body
    const rule = await activeRule(c, { trigger: { type: 'webhook', slug: 'kill' }, effect: { type: 'workflow.transition', targetState: 'review', objectId: '{{payload.id}}' } })
    const locker = new pg.Client({ connectionString: database.url })
    await locker.connect()
    try {
      // Hold the object's row so the worker's run blocks inside its transaction.
      await locker.query('BEGIN')
      await locker.query('SELECT 1 FROM objects WHERE id = $1 FOR UPDATE', [o.id])
      const lockerPid = (await locker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid
      const victim = await startWorker()
      const runId = await trigger('kill', rule.webhookToken, { id: o.id })
      await waitUntil(async () => (await s.db.raw('SELECT count(*)::int AS n FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [lockerPid])).rows[0].n > 0, 60_000, 'the run to block on the object')
      victim.child.kill('SIGKILL')
      await victim.stop()
      await locker.query('COMMIT')
      workers = [await startWorker()]
      const run = await finishedRun(c, rule.id, runId, 120_000)
      assert.equal(run.status, 'succeeded', JSON.stringify(run))
      const history = (await c.get(`/v1/objects/${o.id}/history`)).body.items as Array<{ operation: string }>
      assert.equal(history.filter(h => h.operation === 'transitioned').length, 1)
      const job = await s.db.raw("SELECT retry_count FROM pgboss.job WHERE name = 'automation.run' AND data->>'runId' = ?", [runId])
      assert.ok(job.rows[0].retry_count >= 1, 'pg-boss retried the job')
    } finally {
      await locker.end()
    }
  })
})
