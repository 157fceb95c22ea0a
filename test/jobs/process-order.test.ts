import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import { token } from '../support/harness.js'
import { emptyDatabase, runReleaseJob, startApi, startReceiver, startWorker, stopAllWorkers, waitUntil, type Receiver } from '../support/automation.js'

// docs/operations.md "Processes start in any order": once the release job has run (it must, for the
// schema), API and worker processes start in any order, and no request fails for want of the
// other. Each order runs on a database of its own, from empty, with real processes.

type Step = 'web' | 'worker' | 'traffic'

const ORDERS: Array<{ name: string, steps: Step[] }> = [
  { name: 'web, then worker, then requests', steps: ['web', 'worker', 'traffic'] },
  { name: 'worker, then web, then requests', steps: ['worker', 'web', 'traffic'] },
  { name: 'web and requests before any worker ever ran: the run happens once a worker starts', steps: ['web', 'traffic', 'worker'] }
]

/** Requests to one API that fail the test on any 5xx, naming the request and the answer. */
function strictClient (base: string, bearer: string) {
  return async (method: string, path: string, body?: unknown, auth = bearer): Promise<{ status: number, body: any }> => {
    const res = await fetch(base + path, {
      method,
      headers: { Authorization: `Bearer ${auth}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    assert.ok(res.status < 500, `${method} ${path} answered ${res.status}: ${text}`)
    return { status: res.status, body: text === '' ? null : JSON.parse(text) }
  }
}

describe('release, web and worker start in any order', { timeout: 900_000 }, () => {
  const drops: Array<() => Promise<void>> = []
  after(async () => {
    await stopAllWorkers()
    for (const drop of drops) await drop()
  })

  for (const order of ORDERS) {
    it(order.name, { timeout: 300_000 }, async () => {
      const database = await emptyDatabase()
      drops.push(database.drop)
      assert.match(await runReleaseJob(database.url), /release recorded/)
      const env = { DATABASE_URL: database.url }
      const receiver: Receiver = await startReceiver()
      try {
        let api: Awaited<ReturnType<typeof startApi>> | null = null
        let rule: { id: string, token: string } | null = null
        let runId = ''
        for (const step of order.steps) {
          if (step === 'web') api = await startApi(env)
          if (step === 'worker') await startWorker(env)
          if (step === 'traffic') {
            const request = strictClient(api!.base, token({ tenant: `order-${order.steps.join('-')}`, roles: ['owner'] }))
            assert.equal((await request('GET', '/v1/health/ready')).status, 200)
            const created = await request('POST', '/v1/automation/rules', {
              name: 'order', trigger: { type: 'webhook', slug: 'order' }, effect: { type: 'webhook', url: `${receiver.url}/hook` }
            })
            assert.equal(created.status, 201, JSON.stringify(created.body))
            assert.equal((await request('POST', `/v1/automation/rules/${created.body.id}/publish`, { to: 'active' })).status, 200)
            // Publishing a scheduled rule sends automation.schedule-sync, a second queue the API sends to.
            const scheduled = await request('POST', '/v1/automation/rules', {
              name: 'yearly', trigger: { type: 'schedule', cron: '0 0 1 1 *' }, effect: { type: 'webhook', url: `${receiver.url}/yearly` }
            })
            assert.equal((await request('POST', `/v1/automation/rules/${scheduled.body.id}/publish`, { to: 'active' })).status, 200)
            rule = { id: created.body.id, token: created.body.webhookToken }
            const triggered = await request('POST', '/v1/automation/triggers/order', { n: 1 }, rule.token)
            assert.equal(triggered.status, 202, JSON.stringify(triggered.body))
            runId = triggered.body.runIds[0]
          }
        }
        const request = strictClient(api!.base, token({ tenant: `order-${order.steps.join('-')}`, roles: ['owner'] }))
        const run = await waitUntil(async () => {
          const r = await request('GET', `/v1/automation/rules/${rule!.id}/runs/${runId}`)
          return ['queued', 'running'].includes(r.body.status) ? null : r.body
        }, 60_000, 'the run to finish')
        assert.equal(run.status, 'succeeded', JSON.stringify(run))
        await waitUntil(() => receiver.received.length > 0, 30_000, 'the webhook delivery')
        assert.equal(receiver.received.length, 1)
      } finally {
        await stopAllWorkers()
        await receiver.close()
      }
    })
  }
})
