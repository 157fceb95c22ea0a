import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { clientOf, newTenant, publishedType } from '../support/harness.js'
import { activeRule, scratchDatabase, startApi, startWorker, stopAllWorkers, waitUntil } from '../support/automation.js'
import { boundedRequest, privateRedis, reportFault, settledTally, steadyWrites, stillRunning, type PrivateRedis } from '../support/faults.js'

// Redis gone while REDIS_URL is set (docs/operations.md "When things fail"): Redis holds only rate
// limit counters and rendered layer answers, so the API keeps answering from its own counters
// and the database, and uses Redis again once it is back, without a restart.

const REQUEST_BOUND_MS = 15_000

describe('Redis goes away and comes back under load', { timeout: 600_000 }, () => {
  let database: Awaited<ReturnType<typeof scratchDatabase>>
  let redis: PrivateRedis
  before(async () => {
    database = await scratchDatabase()
    redis = await privateRedis()
  })
  after(async () => {
    await stopAllWorkers()
    await redis?.stop()
    await database?.drop()
  })

  it('reads and writes never answer 5xx or hang, the API counts in Redis again once it is back, every write and run survives once', async () => {
    const env = { DATABASE_URL: database.url, REDIS_URL: redis.url }
    const api = await startApi(env)
    const worker = await startWorker(env)
    const tenant = newTenant('redis')
    const owner = clientOf(api.base).as(tenant, ['owner'])
    const typeId = await publishedType(owner)
    const rule = await activeRule(owner, { trigger: { type: 'object.event', events: ['object.created'], typeId }, effect: { type: 'object.update', attributes: { height: 1 } } })
    const limitKeys = async () => (await redis.keys()).filter(k => k.startsWith('rl'))
    const writes = steadyWrites(api.base, owner.token, typeId, { timeoutMs: REQUEST_BOUND_MS })
    const reads: Array<{ status: number, ms: number, error?: string }> = []
    let reading = true
    const reader = (async () => {
      while (reading) {
        const a = await boundedRequest(`${api.base}/v1/objects?limit=5`, { headers: { Authorization: `Bearer ${owner.token}` } }, REQUEST_BOUND_MS)
        reads.push({ status: a.status, ms: a.ms, error: a.error ?? (a.status === 200 ? undefined : JSON.stringify(a.body)) })
      }
    })()
    try {
      await waitUntil(async () => (await limitKeys()).length > 0, 30_000, 'rate limits counted in Redis')
      await writes.acceptedMore(10, 60_000)
      await redis.stop()
      const readsBefore = reads.length
      await writes.acceptedMore(20, 60_000)
      await waitUntil(() => reads.length >= readsBefore + 20, 60_000, 'reads while Redis is gone')
      await redis.start()
      // A fresh, empty server: keys appear again only if the API reconnected by itself.
      await waitUntil(async () => (await limitKeys()).length > 0, 60_000, 'rate limits counted in Redis again')
      await writes.acceptedMore(10, 60_000)
    } finally {
      await writes.stop()
      reading = false
      await reader
    }
    const answers = writes.answers
    assert.ok(answers.every(a => a.status === 201), `every write answered 201: ${JSON.stringify(answers.filter(a => a.status !== 201).slice(0, 5))}`)
    assert.ok(reads.every(a => a.status === 200), `every read answered 200: ${JSON.stringify(reads.filter(a => a.status !== 200).slice(0, 5))}`)
    const accepted = writes.accepted()
    const t = await settledTally(database.url, tenant, rule.id, accepted, 120_000)
    assert.equal(t.present, accepted.length)
    assert.equal(t.appliedTwice, 0)
    assert.equal(t.appliedOnce, t.objects, 'the rule changed every object once')
    assert.deepEqual(t.runs, { succeeded: t.objects }, 'one succeeded run per object')
    assert.ok(stillRunning(api.child) && stillRunning(worker.child), 'API and worker were not restarted')
    reportFault('redis gone', { injected: 1, accepted: accepted.length, present: t.present, runs: t.runs.succeeded, applied: t.appliedOnce, lost: accepted.length - t.present, duplicated: t.appliedTwice })
    const slowest = Math.max(...answers.map(a => a.ms), ...reads.map(a => a.ms))
    console.log(`faults: redis gone ${reads.length} reads answered 200, slowest answer ${Math.round(slowest)} ms`)
  })
})
