import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { PgBoss } from 'pg-boss'
import { createDb, runStatements, type Db } from '../../lib/db.js'
import * as outbox from '../../lib/outbox/index.js'
import { createQueues } from '../../jobs/enqueue.js'
import { OUTBOX_DISPATCH, type OutboxDispatchPayload } from '../../jobs/contracts.js'
import { handleOutboxDispatch, outboxConsumers } from '../../jobs/handlers/outbox-dispatch.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { newTenant, silentLog } from '../support/harness.js'

async function emit (db: Db, tenant: string, n: number): Promise<void> {
  await runStatements(db, [outbox.emitStatement(tenant, Array.from({ length: n }, (_, i) => ({
    type: 'object.created', aggregateType: 'object', aggregateId: `a-${i}`, payload: { i }
  })))!])
}

describe('outbox delivery', () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 10 }) })
  after(() => db.destroy())

  it('delivers each event exactly once when several claimers race (SKIP LOCKED)', async () => {
    const tenant = newTenant('outbox')
    await emit(db, tenant, 60)
    const seen: string[] = []
    const consumer: outbox.OutboxConsumer = async e => { seen.push(e.id) }
    const results = await Promise.all(Array.from({ length: 4 }, () => outbox.claimAndDeliver(db, [consumer], 10, tenant)))
    let more = await outbox.claimAndDeliver(db, [consumer], 100, tenant)
    while (more.delivered > 0) more = await outbox.claimAndDeliver(db, [consumer], 100, tenant)
    assert.equal(seen.length, 60)
    assert.equal(new Set(seen).size, 60, 'no event was delivered twice')
    assert.equal(results.reduce((n, r) => n + r.delivered, 0) <= 40, true)
    assert.equal(more.pending, 0)
  })

  it('keeps an event pending with its error when a consumer fails, and delivers it on retry', async () => {
    const tenant = newTenant('outbox')
    await emit(db, tenant, 1)
    let fail = true
    const consumer: outbox.OutboxConsumer = async () => { if (fail) throw new Error('downstream unavailable') }
    const first = await outbox.claimAndDeliver(db, [consumer], 10, tenant)
    assert.deepEqual(first, { delivered: 0, failed: 1, pending: 1 })
    const row = await db('outbox_events').where({ tenant_id: tenant }).first()
    assert.equal(row.attempts, 1)
    assert.equal(row.last_error, 'downstream unavailable')
    fail = false
    const second = await outbox.claimAndDeliver(db, [consumer], 10, tenant)
    assert.deepEqual(second, { delivered: 1, failed: 0, pending: 0 })
  })

  it('is drained by the outbox.dispatch job on a real pg-boss', async () => {
    const tenant = newTenant('outbox')
    await emit(db, tenant, 5)
    const boss = new PgBoss({ connectionString: TEST_DATABASE_URL, schema: 'pgboss_test_outbox', supervise: false, schedule: false })
    boss.on('error', () => {})
    await boss.start()
    const delivered: string[] = []
    const consumer: outbox.OutboxConsumer = async e => { if (e.tenant_id === tenant) delivered.push(e.id) }
    outboxConsumers.push(consumer)
    try {
      await createQueues(boss)
      await boss.work<OutboxDispatchPayload>(OUTBOX_DISPATCH.name, { pollingIntervalSeconds: 0.5 }, jobs => handleOutboxDispatch(db, silentLog, jobs))
      await boss.send(OUTBOX_DISPATCH.name, { tenantId: tenant })
      // Delivery commits per batch after the consumers ran: wait until nothing is pending.
      const pending = async () => Number((await db('outbox_events').where({ tenant_id: tenant }).whereNull('delivered_at').count<{ n: number }[]>('* as n'))[0].n)
      for (let i = 0; i < 100 && await pending() > 0; i++) await new Promise(r => setTimeout(r, 100))
      assert.equal(await pending(), 0)
      assert.equal(delivered.length, 5)
      assert.equal(new Set(delivered).size, 5)
    } finally {
      outboxConsumers.splice(outboxConsumers.indexOf(consumer), 1)
      await boss.stop({ graceful: false })
    }
  })
})
