import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createDb, type Db } from '../../lib/db.js'
import * as audit from '../../lib/audit/index.js'
import * as objects from '../../lib/objects/index.js'
import * as objectTypes from '../../lib/object-types/index.js'
import type { ServiceContext } from '../../lib/context.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { newTenant, serviceContext } from '../support/harness.js'

const WRITERS = 20

interface ChainRow { id: string, sequence: number | null, type: string, previous_hash: string | null, hash: string | null }

/** Reads a tenant's whole chain and asserts every chain invariant directly on the rows. */
async function assertIntactChain (db: Db, tenant: string): Promise<ChainRow[]> {
  const rows: ChainRow[] = (await db.raw(`SELECT id, sequence, type, actor, resource_type, resource_id, data, occurred_at, previous_hash, hash
    FROM audit_events WHERE tenant_id = ? ORDER BY sequence NULLS LAST`, [tenant])).rows
  assert.ok(rows.length > 0, 'the tenant has events')
  assert.equal(rows.filter(r => r.sequence === null).length, 0, 'no event is left unsequenced')
  assert.deepEqual(rows.map(r => r.sequence), rows.map((_, i) => i + 1), 'sequences are exactly 1..N')
  let prev = audit.GENESIS_HASH
  for (const r of rows) {
    assert.equal(r.previous_hash, prev, `previous_hash of ${r.sequence} is the hash of ${Number(r.sequence) - 1}`)
    assert.equal(audit.recomputeHash(r as never), r.hash, `hash of ${r.sequence} recomputes`)
    prev = r.hash ?? ''
  }
  const head = (await db.raw('SELECT sequence, hash FROM audit_heads WHERE tenant_id = ?', [tenant])).rows[0]
  assert.deepEqual({ sequence: Number(head.sequence), hash: head.hash }, { sequence: rows.length, hash: prev }, 'the head is the last event')
  return rows
}

async function publishedTypeViaLib (ctx: ServiceContext): Promise<string> {
  const t = await objectTypes.createObjectType(ctx, {
    key: `type_${randomUUID().slice(0, 8)}`,
    name: 'Chain test type',
    attributeSchema: { type: 'object', properties: { n: { type: 'integer' } } }
  })
  await objectTypes.publishObjectType(ctx, t.id, { to: 'published' })
  return t.id
}

/** One writer: creates its object, then patches it twice (each write is one audit event). */
async function writer (ctx: ServiceContext, typeId: string, n: number): Promise<void> {
  const o = await objects.createObject(ctx, { typeId, attributes: { n } })
  const p = await objects.patchObject(ctx, o.id, { attributes: { n: n + 100 } }, o.version)
  await objects.patchObject(ctx, o.id, { attributes: { n: n + 200 } }, p.version)
}

/** Sequencers on every pool, kicked and called directly, racing each other until `done` settles. */
async function raceSequencers (pools: Db[], sequencers: audit.Sequencer[], tenant: string, done: Promise<unknown>): Promise<number> {
  let finished = false
  let rounds = 0
  void done.finally(() => { finished = true })
  await Promise.all(pools.map(async (db, i) => {
    while (!finished) {
      await Promise.all([audit.sequencePending(db, tenant), sequencers[i].kick(tenant), sequencers[(i + 1) % pools.length].kick(tenant)])
      rounds++
    }
  }))
  return rounds
}

async function provesValid (ctx: ServiceContext, id: string, headSequence: number): Promise<void> {
  const p = await audit.proveEvent(ctx, id)
  assert.equal(p.valid, true, JSON.stringify(p))
  assert.deepEqual(p.checks, { hashMatches: true, linkMatches: true, chainIntact: true })
  assert.equal(p.headSequence, headSequence)
  assert.equal(p.brokenAt, undefined)
}

describe('audit chain under concurrent writers', () => {
  const pools: Db[] = []
  const sequencers: audit.Sequencer[] = []
  const sequencerErrors: unknown[] = []
  before(() => {
    for (let i = 0; i < 3; i++) {
      pools.push(createDb(TEST_DATABASE_URL, { poolMax: 12 }))
      sequencers.push(new audit.Sequencer(pools[i], err => sequencerErrors.push(err)))
    }
  })
  after(async () => {
    await Promise.all(sequencers.map(s => s.stop()))
    await Promise.all(pools.map(p => p.destroy()))
  })

  it('leaves a gapless, intact chain whose proof verifies, with sequencers racing from three pools (async mode)', async () => {
    const tenant = newTenant('chain')
    const ctxs = Array.from({ length: WRITERS }, (_, i) => ({ ...serviceContext(pools[i % 3], tenant, ['owner']), sequencer: sequencers[i % 3] }))
    const typeId = await publishedTypeViaLib(ctxs[0])
    const writes = Promise.all(ctxs.map((ctx, i) => writer(ctx, typeId, i)))
    const rounds = await raceSequencers(pools, sequencers, tenant, writes)
    await writes
    await Promise.all(sequencers.map(s => s.kick(tenant)))
    await audit.sequencePending(pools[0], tenant)

    assert.deepEqual(sequencerErrors, [])
    assert.ok(rounds > 0, 'the sequencers raced the writers')
    const rows = await assertIntactChain(pools[0], tenant)
    assert.equal(rows.filter(r => r.type === 'object.created').length, WRITERS)
    assert.equal(rows.filter(r => r.type === 'object.updated').length, 2 * WRITERS)
    for (const r of [rows[0], rows[rows.length >> 1], rows[rows.length - 1]]) await provesValid(ctxs[0], r.id, rows.length)
  })

  it('leaves a gapless, intact chain whose proof verifies when writes sequence inside their transaction (sync mode)', async () => {
    const tenant = newTenant('chain-sync')
    const ctxs = Array.from({ length: WRITERS }, (_, i) => serviceContext(pools[i % 3], tenant, ['owner'], { AUDIT_SEQUENCING: 'sync' }))
    assert.equal(ctxs[0].config.auditSequencing, 'sync')
    const typeId = await publishedTypeViaLib(ctxs[0])
    const writes = Promise.all(ctxs.map((ctx, i) => writer(ctx, typeId, i)))
    await raceSequencers(pools, sequencers, tenant, writes)
    await writes

    // Sync mode: every answered write is already sequenced, with no kick and no sweep.
    const pending = await pools[0]('audit_events').where({ tenant_id: tenant }).whereNull('sequence').count({ n: '*' })
    assert.equal(Number(pending[0].n), 0)
    const rows = await assertIntactChain(pools[0], tenant)
    assert.equal(rows.length, 2 + 3 * WRITERS)
    await provesValid(ctxs[0], rows[rows.length - 1].id, rows.length)
  })
})

describe('GET proof on a tampered chain', () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 4 }) })
  after(() => db.destroy())

  /** A fresh tenant with a sequenced chain of n events; returns the event ids by sequence (index 0 = sequence 1). */
  async function chainOf (n: number): Promise<{ tenant: string, ctx: ServiceContext, ids: string[] }> {
    const tenant = newTenant('tamper')
    for (let i = 1; i <= n; i++) {
      await audit.recordStandalone(db, tenant, { sub: 'u', roles: ['owner'] }, { type: 'object.updated', resourceType: 'object', resourceId: `o${i}`, data: { i } })
    }
    await audit.sequencePending(db, tenant)
    const rows = await db('audit_events').where({ tenant_id: tenant }).orderBy('sequence').select('id')
    return { tenant, ctx: serviceContext(db, tenant, ['owner']), ids: rows.map(r => r.id) }
  }

  it('proves an untouched chain valid', async () => {
    const { ctx, ids } = await chainOf(5)
    const p = await audit.proveEvent(ctx, ids[2])
    assert.equal(p.valid, true)
    assert.equal(p.sequence, 3)
    assert.equal(p.headSequence, 5)
  })

  it('marks the altered event and every later one invalid, brokenAt the altered sequence', async () => {
    const { tenant, ctx, ids } = await chainOf(6)
    await db.raw(`UPDATE audit_events SET data = '{"i": 999}' WHERE tenant_id = ? AND sequence = 3`, [tenant])

    const own = await audit.proveEvent(ctx, ids[2])
    assert.equal(own.valid, false)
    assert.deepEqual(own.checks, { hashMatches: false, linkMatches: true, chainIntact: false })
    assert.equal(own.brokenAt, 3)

    const later = await audit.proveEvent(ctx, ids[5])
    assert.equal(later.valid, false)
    assert.deepEqual(later.checks, { hashMatches: true, linkMatches: true, chainIntact: false })
    assert.equal(later.brokenAt, 3)

    // docs/behaviour.md "Audit": any altered row between genesis and head invalidates, so an earlier event too.
    const earlier = await audit.proveEvent(ctx, ids[0])
    assert.equal(earlier.valid, false)
    assert.equal(earlier.brokenAt, 3)
  })

  it('catches a rewrite that also recomputed the altered hash, at the next link', async () => {
    const { tenant, ctx, ids } = await chainOf(5)
    await db.raw(`UPDATE audit_events SET data = '{"i": 999}' WHERE tenant_id = ? AND sequence = 2`, [tenant])
    const row = await db('audit_events').where({ tenant_id: tenant, sequence: 2 }).first()
    await db('audit_events').where({ id: row.id }).update({ hash: audit.recomputeHash({ ...row, sequence: 2 }) })
    const p = await audit.proveEvent(ctx, ids[2])
    assert.equal(p.valid, false)
    assert.deepEqual(p.checks, { hashMatches: true, linkMatches: false, chainIntact: false })
    assert.equal(p.brokenAt, 3)
  })

  it('detects a deleted event (a gap), brokenAt the missing sequence', async () => {
    const { tenant, ctx, ids } = await chainOf(5)
    await db.raw('DELETE FROM audit_events WHERE tenant_id = ? AND sequence = 3', [tenant])
    const p = await audit.proveEvent(ctx, ids[3])
    assert.equal(p.valid, false)
    assert.deepEqual(p.checks, { hashMatches: true, linkMatches: false, chainIntact: false })
    assert.equal(p.brokenAt, 3)
    await assert.rejects(audit.proveEvent(ctx, ids[2]), { code: 'NOT_FOUND' })
  })

  it('detects a truncated tail and a moved head', async () => {
    const { tenant, ctx, ids } = await chainOf(4)
    await db.raw('DELETE FROM audit_events WHERE tenant_id = ? AND sequence = 4', [tenant])
    const p = await audit.proveEvent(ctx, ids[0])
    assert.equal(p.valid, false)
    assert.equal(p.brokenAt, 4)
    assert.equal(p.headSequence, 4)

    const other = await chainOf(3)
    await db('audit_heads').where({ tenant_id: other.tenant }).update({ hash: 'f'.repeat(64) })
    const q = await audit.proveEvent(other.ctx, other.ids[1])
    assert.equal(q.valid, false)
    assert.equal(q.brokenAt, 3)
  })

  it('verifies a chain longer than one batch', async () => {
    const tenant = newTenant('long')
    const n = audit.PROOF_BATCH + 250
    await db.raw(`INSERT INTO audit_events (tenant_id, type, data, occurred_at)
      SELECT ?, 'object.updated', jsonb_build_object('i', g), date_trunc('milliseconds', clock_timestamp()) FROM generate_series(1, ?) g`, [tenant, n])
    await audit.sequencePending(db, tenant)
    const ctx = serviceContext(db, tenant, ['owner'])
    const last = await db('audit_events').where({ tenant_id: tenant, sequence: n }).first('id')
    assert.equal((await audit.proveEvent(ctx, last.id)).valid, true)
    await db.raw(`UPDATE audit_events SET type = 'object.deleted' WHERE tenant_id = ? AND sequence = ?`, [tenant, audit.PROOF_BATCH + 7])
    const p = await audit.proveEvent(ctx, last.id)
    assert.equal(p.valid, false)
    assert.equal(p.brokenAt, audit.PROOF_BATCH + 7)
  })

  it('starts a head again at genesis when it is gone though this process has seen it', async () => {
    // The background sequencer locks a head it has seen in one statement (no genesis insert); a
    // head that disappeared (a test database emptied between runs) must not leave events pending.
    const tenant = newTenant('regone')
    const sequencer = new audit.Sequencer(db, err => { throw err }, 0)
    const event = { type: 'object.updated', resourceType: 'object', resourceId: 'x', data: {} }
    await audit.recordStandalone(db, tenant, null, event)
    await sequencer.kick(tenant)
    await assertIntactChain(db, tenant)
    for (const table of ['audit_events', 'audit_tree_nodes', 'audit_heads']) await db(table).where({ tenant_id: tenant }).delete()
    await audit.recordStandalone(db, tenant, null, event)
    await audit.recordStandalone(db, tenant, null, event)
    await sequencer.kick(tenant)
    assert.equal((await assertIntactChain(db, tenant)).length, 2)
    await sequencer.stop()
  })
})
