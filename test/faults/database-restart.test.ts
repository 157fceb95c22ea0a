import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { clientOf, newTenant, publishedType } from '../support/harness.js'
import { activeRule, runReleaseJob, startApi, startWorker, stopAllWorkers, waitUntil } from '../support/automation.js'
import { boundedRequest, privatePostgres, reportFault, settledTally, steadyWrites, stillRunning, type PrivatePostgres } from '../support/faults.js'

// PostgreSQL restarted under load (docs/operations.md "When things fail"): a real API and a real
// worker on a PostgreSQL server of the test's own, a client writing steadily and a rule firing on
// every write, then `pg_ctl stop -m fast` and start again. Neither process is restarted.

/** Every client request is cut off after this; none may need it. */
const REQUEST_BOUND_MS = 15_000

/** Polls readiness every 200 ms (each probe bounded), keeping every answer. */
function watchReadiness (base: string) {
  const seen: Array<{ status: number, at: number, ms: number }> = []
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const a = await boundedRequest(`${base}/v1/health/ready`, {}, REQUEST_BOUND_MS)
      seen.push({ status: a.status, at: a.at, ms: a.ms })
      await new Promise(resolve => setTimeout(resolve, 200))
    }
  })()
  return {
    seen,
    since: (t: number) => seen.filter(s => s.at >= t).map(s => s.status),
    async stop () { stopped = true; await loop }
  }
}

describe('PostgreSQL restarts under load', { timeout: 600_000 }, () => {
  let server: PrivatePostgres
  before(async () => {
    server = await privatePostgres()
    await runReleaseJob(server.url('spatial'))
  })
  after(async () => {
    await stopAllWorkers()
    await server?.destroy()
  })

  it('readiness answers 503 then 200, no request outlives its bound, API and worker reconnect, every accepted write and run survives once', async () => {
    const url = server.url('spatial')
    const api = await startApi({ DATABASE_URL: url })
    const worker = await startWorker({ DATABASE_URL: url })
    const tenant = newTenant('pgrestart')
    const owner = clientOf(api.base).as(tenant, ['owner'])
    const typeId = await publishedType(owner)
    const rule = await activeRule(owner, {
      trigger: { type: 'object.event', events: ['object.created'], typeId },
      effect: { type: 'object.update', attributes: { height: 1 } }
    })
    const ready = watchReadiness(api.base)
    const writes = steadyWrites(api.base, owner.token, typeId, { timeoutMs: REQUEST_BOUND_MS })
    let answers
    let upAt = 0
    try {
      await writes.acceptedMore(10, 60_000)
      const downAt = Date.now()
      await server.stop()
      await waitUntil(() => ready.since(downAt).includes(503), 30_000, 'readiness to answer 503')
      await waitUntil(() => writes.answers.some(a => a.at > downAt && a.status !== 201), 30_000, 'a write refused while the database is down')
      upAt = Date.now()
      await server.start()
      await waitUntil(() => ready.since(upAt).at(-1) === 200, 60_000, 'readiness to answer 200 again')
      await writes.acceptedMore(10, 90_000)
    } finally {
      answers = await writes.stop()
      await ready.stop()
    }

    const slowest = Math.max(...answers.map(a => a.ms), ...ready.seen.map(s => s.ms))
    assert.ok(answers.every(a => a.status !== 0), `no write hung past ${REQUEST_BOUND_MS} ms: ${JSON.stringify(answers.filter(a => a.status === 0))}`)
    assert.ok(ready.seen.every(s => s.status !== 0), 'no readiness probe hung')
    const refused = answers.filter(a => a.status !== 201)
    // On a miss, what the API logged for it: the error it did not recognise as the database's absence.
    const unrecognised = () => api.output().split('\n').filter(l => /unhandled error/.test(l)).slice(0, 3).join('\n')
    assert.ok(refused.every(a => a.status === 503 && /NOT_READY/.test(a.error ?? '')), `refused writes answer 503 NOT_READY: ${JSON.stringify(refused.slice(0, 5))}\n${unrecognised()}`)

    const accepted = writes.accepted()
    const t = await settledTally(url, tenant, rule.id, accepted, 180_000)
    const settledMs = Date.now() - upAt
    assert.equal(t.present, accepted.length, 'every write answered 201 is present')
    assert.equal(t.appliedTwice, 0, 'no run applied its effect twice')
    assert.equal(t.appliedOnce, t.objects, 'the rule changed every object once')
    assert.deepEqual(t.runs, { succeeded: t.objects }, 'one succeeded run per object')
    assert.equal(t.outboxPending, 0)
    assert.ok(stillRunning(api.child) && stillRunning(worker.child), 'API and worker were not restarted')
    reportFault('postgres restart', {
      injected: 1, accepted: accepted.length, present: t.present, runs: t.runs.succeeded, applied: t.appliedOnce,
      lost: accepted.length - t.present, duplicated: t.appliedTwice
    })
    console.log(`faults: postgres restart refused ${refused.length} writes (${[...new Set(refused.map(a => a.status))].join(', ')}), slowest answer ${Math.round(slowest)} ms, every run settled ${Math.round(settledMs / 1000)} s after the start`)
  })
})
