import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { PgBoss } from 'pg-boss'
import { createDb, runStatements, type Db } from '../../lib/db.js'
import * as outbox from '../../lib/outbox/index.js'
import { createQueues } from '../../lib/queues/index.js'
import { OUTBOX_DISPATCH, OUTBOX_PRUNE, type OutboxDispatchPayload } from '../../lib/queues/index.js'
import { handleOutboxDispatch } from '../../jobs/handlers/outbox-dispatch.js'
import { handleOutboxPrune } from '../../jobs/handlers/outbox-prune.js'
import * as tenants from '../../lib/tenants/index.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { newTenant, silentLog } from '../support/harness.js'
import { Writable } from 'node:stream'
import { createLogger } from '../../lib/log.js'
import { registry } from '../../lib/metrics.js'

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

  it('a flush-style claim (waitForHeld) waits for events another claimer holds; the default claim skips them', async () => {
    const tenant = newTenant('outbox')
    await emit(db, tenant, 3)
    const delivered: string[] = []
    const consumer: outbox.OutboxConsumer = async e => { delivered.push(e.id) }
    // A worker's dispatch in the middle of its claim: the first two events locked, not yet delivered.
    const holder = await db.transaction()
    const held = await holder('outbox_events').where({ tenant_id: tenant }).orderBy('position').limit(2).forUpdate().select('id')
    assert.equal(held.length, 2)
    try {
      // The default claim skips them and delivers the third at once.
      assert.deepEqual(await outbox.claimAndDeliver(db, [consumer], 10, tenant), { delivered: 1, failed: 0, pending: 2 })
      // With waitForHeld, the claim blocks on them until their holder has finished.
      let settled = false
      const flush = outbox.claimAndDeliver(db, [consumer], 10, tenant, { waitForHeld: true }).finally(() => { settled = true })
      await new Promise(r => setTimeout(r, 300))
      assert.equal(settled, false, 'the waiting claim must not answer while the events are held')
      // The holder delivers the first one and lets the second go undelivered.
      await holder('outbox_events').where({ tenant_id: tenant, id: held[0].id }).update({ delivered_at: db.fn.now() })
      await holder.commit()
      // The first is delivered by its holder and not again; the second is delivered by the waiting claim.
      assert.deepEqual(await flush, { delivered: 1, failed: 0, pending: 0 })
      assert.deepEqual(delivered.filter(id => id === held[0].id), [], 'an event its holder delivered is not delivered again')
      assert.equal(delivered.includes(held[1].id), true)
    } finally {
      if (!holder.isCompleted()) await holder.rollback()
    }
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
    // Held back for a second after its first failure; offered again once due.
    await db('outbox_events').where({ tenant_id: tenant }).update({ next_attempt_at: db.raw("now() - interval '1 second'") })
    const second = await outbox.claimAndDeliver(db, [consumer], 10, tenant)
    assert.deepEqual(second, { delivered: 1, failed: 0, pending: 0 })
  })

  it('retries a failing event after a growing, capped delay, logging each failure and counting it', async () => {
    const tenant = newTenant('outbox')
    await emit(db, tenant, 2)
    const lines: Array<Record<string, any>> = []
    const log = createLogger('outbox-test', 'warn', new Writable({ write (chunk, _enc, cb) { lines.push(JSON.parse(String(chunk))); cb() } }))
    const failures = async () => (await registry.getSingleMetric('outbox_delivery_failures_total')!.get()).values.find(v => v.labels.type === 'object.created')?.value ?? 0
    const counted = await failures()
    const offered: number[] = []
    const consumer: outbox.OutboxConsumer = async e => { offered.push((e.payload as { i: number }).i); if ((e.payload as { i: number }).i === 0) throw new Error('receiver down') }
    const row = async () => db('outbox_events').where({ tenant_id: tenant }).whereRaw("payload->>'i' = '0'").first()
    const delay = async () => (await db.raw("SELECT extract(epoch FROM next_attempt_at - now())::float8 AS s FROM outbox_events WHERE tenant_id = ? AND payload->>'i' = '0'", [tenant])).rows[0].s
    const makeDue = () => db('outbox_events').where({ tenant_id: tenant }).whereNull('delivered_at').update({ next_attempt_at: db.raw("now() - interval '1 millisecond'") })

    // First failure: the other event is delivered, the failing one waits about 1 s.
    assert.deepEqual(await outbox.claimAndDeliver(db, [consumer], 10, tenant, { log }), { delivered: 1, failed: 1, pending: 1 })
    let r = await row()
    assert.equal(r.attempts, 1)
    assert.equal(r.last_error, 'receiver down')
    assert.ok(Math.abs(await delay() - 1) < 0.5, 'first retry after about 1 s')
    assert.equal(lines.length, 1)
    assert.equal(lines[0].level, 40, 'warn')
    assert.equal(lines[0].eventId, r.id)
    assert.equal(lines[0].attempts, 1)
    assert.equal(lines[0].retryInSeconds, 1)
    assert.equal(lines[0].err.message, 'receiver down')
    assert.equal(await failures(), counted + 1)

    // Not offered again while it waits: no claim, no dispatch for it.
    offered.length = 0
    assert.deepEqual(await outbox.claimAndDeliver(db, [consumer], 10, tenant, { log }), { delivered: 0, failed: 0, pending: 1 })
    assert.deepEqual(offered, [])
    assert.equal((await db.raw('SELECT tenant_id FROM outbox_events WHERE tenant_id = ? AND delivered_at IS NULL AND (next_attempt_at IS NULL OR next_attempt_at <= now())', [tenant])).rows.length, 0)

    // Due again: offered, fails, waits twice as long; then 4 s; the delay stops growing at the cap.
    for (const expected of [2, 4]) {
      await makeDue()
      await outbox.claimAndDeliver(db, [consumer], 10, tenant, { log })
      assert.ok(Math.abs(await delay() - expected) < 0.5, `retry after about ${expected} s`)
    }
    await db('outbox_events').where({ tenant_id: tenant }).whereNull('delivered_at').update({ attempts: 40 })
    await makeDue()
    await outbox.claimAndDeliver(db, [consumer], 10, tenant, { log })
    assert.ok(Math.abs(await delay() - outbox.RETRY_MAX_SECONDS) < 0.5, 'capped')
    r = await row()
    assert.equal(r.attempts, 41)
    assert.equal(lines.length, 4)
    assert.equal(await failures(), counted + 4)

    // A flush (waiting: true) delivers it now, whatever its delay.
    const flushed: number[] = []
    const flushing: outbox.OutboxConsumer = async e => { flushed.push((e.payload as { i: number }).i) }
    assert.deepEqual(await outbox.claimAndDeliver(db, [flushing], 10, tenant, { waiting: true }), { delivered: 1, failed: 0, pending: 0 })
    assert.deepEqual(flushed, [0])
  })

  it('delays follow 1, 2, 4 ... seconds up to the cap', () => {
    assert.deepEqual([1, 2, 3, 4, 9, 10, 50].map(outbox.retryDelaySeconds), [1, 2, 4, 8, 256, outbox.RETRY_MAX_SECONDS, outbox.RETRY_MAX_SECONDS])
  })

  it('a dispatch delivers in passes until one delivers nothing, events committed meanwhile included', async () => {
    const tenant = newTenant('outbox')
    await emit(db, tenant, 5)
    const delivered: number[] = []
    let emitted = false
    // During the first pass, three more events commit (another write's transaction).
    const consumer: outbox.OutboxConsumer = async e => {
      if (e.tenant_id !== tenant) return
      delivered.push((e.payload as { i: number }).i)
      if (!emitted) { emitted = true; await emit(db, tenant, 3) }
    }
    await handleOutboxDispatch({ db, log: silentLog, consumers: [consumer] }, [{ id: 'j1', name: OUTBOX_DISPATCH.name, data: { tenantId: tenant } } as never])
    assert.deepEqual(delivered, [0, 1, 2, 3, 4, 0, 1, 2])
    assert.deepEqual(await outbox.claimAndDeliver(db, [], 10, tenant), { delivered: 0, failed: 0, pending: 0 })

    // A consumer that fails every event: the first pass delivers nothing, and the job ends.
    const stuck = newTenant('outbox')
    await emit(db, stuck, 2)
    const failing: outbox.OutboxConsumer = async e => { if (e.tenant_id === stuck) throw new Error('receiver down') }
    await handleOutboxDispatch({ db, log: silentLog, consumers: [failing] }, [{ id: 'j2', name: OUTBOX_DISPATCH.name, data: { tenantId: stuck } } as never])
    const left = await db('outbox_events').where({ tenant_id: stuck }).whereNull('delivered_at').select('attempts')
    assert.deepEqual(left.map(r => r.attempts), [1, 1])
  })

  it('is drained by the outbox.dispatch job on a real pg-boss', async () => {
    const tenant = newTenant('outbox')
    await emit(db, tenant, 5)
    const boss = new PgBoss({ connectionString: TEST_DATABASE_URL, schema: 'pgboss_test_outbox', supervise: false, schedule: false })
    boss.on('error', () => {})
    await boss.start()
    const delivered: string[] = []
    const consumer: outbox.OutboxConsumer = async e => { if (e.tenant_id === tenant) delivered.push(e.id) }
    try {
      await createQueues(boss)
      await boss.work<OutboxDispatchPayload>(OUTBOX_DISPATCH.name, { pollingIntervalSeconds: 0.5 }, jobs => handleOutboxDispatch({ db, log: silentLog, consumers: [consumer] }, jobs))
      await boss.send(OUTBOX_DISPATCH.name, { tenantId: tenant })
      // Delivery commits per batch after the consumers ran: wait until nothing is pending.
      const pending = async () => Number((await db('outbox_events').where({ tenant_id: tenant }).whereNull('delivered_at').count<{ n: number }[]>('* as n'))[0].n)
      for (let i = 0; i < 100 && await pending() > 0; i++) await new Promise(r => setTimeout(r, 100))
      assert.equal(await pending(), 0)
      assert.equal(delivered.length, 5)
      assert.equal(new Set(delivered).size, 5)
    } finally {
      await boss.stop({ graceful: false })
    }
  })
})

describe('outbox retention', () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 4 }) })
  after(() => db.destroy())

  /** `n` events of `tenant` created and delivered the given hours ago (null: undelivered). */
  async function aged (tenant: string, n: number, createdHoursAgo: number, deliveredHoursAgo: number | null): Promise<string[]> {
    const r = await db.raw(`INSERT INTO outbox_events (tenant_id, type, aggregate_type, aggregate_id, payload, created_at, delivered_at, attempts)
      SELECT ?, 'object.updated', 'object', 'a-' || g, '{}'::jsonb, now() - make_interval(hours => ?), now() - make_interval(hours => ?::int), 1
      FROM generate_series(1, ?) g ORDER BY g RETURNING id`, [tenant, createdHoursAgo, deliveredHoursAgo, n])
    return r.rows.map((x: { id: string }) => x.id)
  }
  const left = async (tenant: string) => (await db('outbox_events').where({ tenant_id: tenant }).orderBy('position').select('id')).map(r => r.id)

  it('deletes events delivered before the retention age, keeps later and undelivered ones, in batches, every tenant', async () => {
    const a = newTenant('retention')
    const b = newTenant('retention')
    await tenants.ensureTenant(db, a)
    await tenants.ensureTenant(db, b)
    // a: an old undelivered event first (stuck behind a failing consumer), then events delivered
    // 30 h ago, one created 30 h ago but delivered 2 h ago (a late retry), and recent ones.
    const stuck = await aged(a, 1, 40, null)
    await aged(a, 3, 31, 30)
    const lateRetry = await aged(a, 1, 30, 2)
    const recent = await aged(a, 2, 2, 1)
    // b: more than one batch (5,000) of events delivered 30 h ago, then one delivered just now.
    await aged(b, 12_000, 31, 30)
    const fresh = await aged(b, 1, 0, 0)

    const pruned = await outbox.pruneDelivered(db, 24)
    assert.equal(pruned >= 12_003, true, `pruned ${pruned}`)
    assert.deepEqual(await left(a), [...stuck, ...lateRetry, ...recent])
    assert.deepEqual(await left(b), fresh)
    // A second pass finds nothing more of these tenants.
    await outbox.pruneDelivered(db, 24)
    assert.deepEqual(await left(a), [...stuck, ...lateRetry, ...recent])
    // A shorter retention takes the late retry and the recent ones too, never the undelivered one.
    await outbox.pruneDelivered(db, 1, new Date(Date.now() + 3_600_000))
    assert.deepEqual(await left(a), stuck)
  })

  it('runs as the outbox.prune job on a real pg-boss', async () => {
    const tenant = newTenant('retention')
    await tenants.ensureTenant(db, tenant)
    await aged(tenant, 3, 50, 49)
    const kept = await aged(tenant, 1, 1, 1)
    const boss = new PgBoss({ connectionString: TEST_DATABASE_URL, schema: 'pgboss_test_outbox', supervise: false, schedule: false })
    boss.on('error', () => {})
    await boss.start()
    try {
      await createQueues(boss)
      await boss.work(OUTBOX_PRUNE.name, { pollingIntervalSeconds: 0.5 }, () => handleOutboxPrune(db, silentLog, 48))
      const id = await boss.send(OUTBOX_PRUNE.name, {})
      assert.ok(id !== null)
      // The job goes through every tenant of the test database: wait until it has completed.
      const state = async () => (await boss.getJobById(OUTBOX_PRUNE.name, id))?.state
      for (let i = 0; i < 300 && await state() !== 'completed'; i++) await new Promise(r => setTimeout(r, 100))
      assert.equal(await state(), 'completed')
      assert.deepEqual(await left(tenant), kept)
    } finally {
      await boss.stop({ graceful: false })
    }
  })
})
