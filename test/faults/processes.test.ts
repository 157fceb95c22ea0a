import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { clientOf, newTenant, publishedType, type Client } from '../support/harness.js'
import {
  activeRule, finishedRun, scratchDatabase, startApi, startWorker as startWorkerOn, stopAllWorkers, useReceivers, waitUntil,
  type Receiver
} from '../support/automation.js'
import { reportFault, settledTally, steadyWrites, tally } from '../support/faults.js'

// Workers killed with SIGKILL and receivers that misbehave (docs/operations.md "When things
// fail"): a real API process and real worker processes on a database of their own, receivers on
// 127.0.0.1. The plain SIGKILL-mid-run case (a run blocked on a row lock) is in
// test/jobs/automation.test.ts; these kill under load and mid-webhook.

/** Receiver deliveries answered 2xx per Idempotency-Key (a receiver that deduplicates applies each once). */
function acknowledged (r: Receiver): Map<string, number> {
  const n = new Map<string, number>()
  for (const x of r.received) {
    if (x.status === undefined || x.status >= 300) continue
    const key = String(x.headers['idempotency-key'])
    n.set(key, (n.get(key) ?? 0) + 1)
  }
  return n
}

describe('faults: workers killed, receivers that hang, reset or flood', { timeout: 900_000 }, () => {
  let database: Awaited<ReturnType<typeof scratchDatabase>>
  let api: Awaited<ReturnType<typeof startApi>>
  const receiver = useReceivers()
  const startWorker = (env: Record<string, string> = {}) => startWorkerOn({ DATABASE_URL: database.url, ...env })

  before(async () => {
    database = await scratchDatabase()
    api = await startApi({ DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })
  })
  after(async () => {
    await stopAllWorkers()
    await database?.drop()
  })

  const owner = (prefix: string): { c: Client, tenant: string } => {
    const tenant = newTenant(prefix)
    return { c: clientOf(api.base).as(tenant, ['owner']), tenant }
  }

  async function trigger (slug: string, token: string, body: unknown): Promise<string> {
    const res = await clientOf(api.base).request('POST', `/v1/automation/triggers/${slug}`, { token, body })
    assert.equal(res.status, 202, res.text)
    return res.body.runIds[0]
  }

  it('a worker killed under load mid-run: another finishes every run, each effect applied once, the outbox drained', async () => {
    const { c, tenant } = owner('kill-run')
    const typeId = await publishedType(c)
    const rule = await activeRule(c, { trigger: { type: 'object.event', events: ['object.created'], typeId }, effect: { type: 'object.update', attributes: { height: 1 } } })
    const victim = await startWorker()
    const writes = steadyWrites(api.base, c.token, typeId, { timeoutMs: 15_000 })
    try {
      await writes.acceptedMore(10, 60_000)
      // Killed while its runs come in: some done, others queued or in its hands.
      await waitUntil(async () => ((await tally(database.url, tenant, rule.id, [])).runs.succeeded ?? 0) >= 3, 60_000, 'the first runs')
      victim.child.kill('SIGKILL')
      await victim.stop()
      await writes.acceptedMore(5, 60_000)
    } finally {
      await writes.stop()
    }
    const worker = await startWorker()
    const accepted = writes.accepted()
    assert.ok(writes.answers.every(a => a.status === 201), 'writes do not depend on workers')
    const t = await settledTally(database.url, tenant, rule.id, accepted, 180_000)
    assert.equal(t.present, accepted.length)
    assert.equal(t.appliedTwice, 0)
    assert.equal(t.appliedOnce, t.objects, 'the rule changed every object once')
    assert.deepEqual(t.runs, { succeeded: accepted.length })
    await worker.stop()
    reportFault('worker SIGKILL mid-run', { injected: 1, accepted: accepted.length, present: t.present, runs: t.runs.succeeded, applied: t.appliedOnce, lost: accepted.length - t.present, duplicated: t.appliedTwice })
  })

  it('a worker killed while its webhook calls are held by the receiver: another delivers each run once, same Idempotency-Key', async () => {
    const { c } = owner('kill-hook')
    const r = await receiver('hang')
    const rule = await activeRule(c, { trigger: { type: 'webhook', slug: 'held' }, effect: { type: 'webhook', url: r.url, body: { n: '{{payload.n}}' } } })
    // Its attempts would time out after 30 s: it is killed long before, with every call in flight.
    const victim = await startWorker({ WEBHOOK_TIMEOUT_SECONDS: '30' })
    const runIds = await Promise.all([1, 2, 3].map(n => trigger('held', rule.webhookToken, { n })))
    await waitUntil(() => r.received.length >= runIds.length, 60_000, 'every call to be held')
    r.replies.splice(0, r.replies.length, { status: 200, body: '{"ok":true}' })
    victim.child.kill('SIGKILL')
    await victim.stop()
    const worker = await startWorker()
    // The killed attempts come back once their jobs expire (webhook.deliver: 45 s).
    const runs = await Promise.all(runIds.map(id => finishedRun(c, rule.id, id, 180_000)))
    assert.deepEqual(runs.map(x => x.status), ['succeeded', 'succeeded', 'succeeded'], JSON.stringify(runs))
    assert.deepEqual(runs.map(x => x.attempts), [1, 1, 1], 'the attempt cut off by the kill was never recorded, so it is attempt 1 again')
    const acks = acknowledged(r)
    assert.deepEqual(new Set(acks.keys()), new Set(runIds))
    const duplicated = [...acks.values()].filter(n => n > 1).length
    assert.equal(duplicated, 0, 'each run acknowledged once')
    for (const id of runIds) assert.equal(r.received.filter(x => x.headers['idempotency-key'] === id).length, 2, 'held once, delivered once')
    await worker.stop()
    reportFault('worker SIGKILL mid-webhook', { injected: 1, accepted: runIds.length, present: runIds.length, runs: runs.length, applied: acks.size, lost: runIds.length - acks.size, duplicated })
  })

  it('receivers that hang, reset the connection or flood: retried within bounded time, a later good answer succeeds, nothing duplicated', async () => {
    const { c } = owner('receivers')
    const worker = await startWorker() // WEBHOOK_TIMEOUT_SECONDS 2 (test/support/automation.ts)
    const faults: Array<[string, Receiver]> = [
      ['hang', await receiver('hang', { status: 200, body: '{"ok":true}' })],
      ['reset', await receiver('reset', { status: 200, body: '{"ok":true}' })],
      ['flood', await receiver({ status: 500, flood: true }, { status: 200, body: '{"ok":true}' })]
    ]
    const started = Date.now()
    const runs = await Promise.all(faults.map(async ([name, r]) => {
      const rule = await activeRule(c, { trigger: { type: 'webhook', slug: name }, effect: { type: 'webhook', url: r.url, retry: { maxAttempts: 3 } } })
      return finishedRun(c, rule.id, await trigger(name, rule.webhookToken, {}), 60_000)
    }))
    const elapsed = Date.now() - started
    for (const [i, [name, r]] of faults.entries()) {
      const run = runs[i]
      assert.equal(run.status, 'succeeded', `${name}: ${JSON.stringify(run)}`)
      assert.equal(run.attempts, 2, name)
      assert.equal(run.attemptLog[0].outcome, 'failed', name)
      assert.deepEqual([...acknowledged(r).entries()], [[run.id, 1]], `${name}: acknowledged once`)
    }
    assert.match(runs[0].attemptLog[0].detail, /timed out/)
    assert.match(runs[1].attemptLog[0].detail, /connection failed/)
    assert.equal(runs[2].attemptLog[0].status, 500)
    assert.ok(runs[2].attemptLog[0].durationMs < 2500, `the flood was cut off, not read to its end: ${runs[2].attemptLog[0].durationMs} ms`)
    // Three attempts' worth of bound: the 2 s timeout, the 1 s backoff, the good answer, with room for a loaded machine.
    assert.ok(elapsed < 30_000, `settled in ${elapsed} ms`)
    await worker.stop()
    reportFault('receiver hang/reset/flood', { injected: 3, accepted: 3, present: 3, runs: 3, applied: 3, lost: 0, duplicated: 0 })
  })
})
