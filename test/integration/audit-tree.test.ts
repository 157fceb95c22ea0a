import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, type Db } from '../../lib/db.js'
import * as audit from '../../lib/audit/index.js'
import type { ServiceContext } from '../../lib/context.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { newTenant, serviceContext } from '../support/harness.js'
import { hexes, leafOf, mth, verifyConsistency, verifyInclusion, verifyTreeHead } from '../support/rfc9162.js'

const N = 70
const ACTOR = { sub: 'u', roles: ['owner'] }

interface Row { id: string, sequence: number, type: string, actor: any, resource_type: string | null, resource_id: string | null, data: unknown, occurred_at: Date, previous_hash: string, hash: string }

async function chain (db: Db, tenant: string): Promise<Row[]> {
  return (await db.raw('SELECT * FROM audit_events WHERE tenant_id = ? AND sequence IS NOT NULL ORDER BY sequence', [tenant])).rows
}

/** The leaf inputs a verifier would use: each event's hash recomputed from its own fields. */
const recomputedLeaves = (rows: Row[]) => rows.map(r => Buffer.from(audit.recomputeHash(r as never), 'hex'))

async function treeRows (db: Db, tenant: string): Promise<{ nodes: string[], frontier: string[] }> {
  const nodes = (await db.raw("SELECT level || ':' || idx || ':' || encode(hash, 'hex') AS n FROM audit_tree_nodes WHERE tenant_id = ? ORDER BY level, idx", [tenant])).rows.map((r: { n: string }) => r.n)
  const head = await db('audit_heads').where({ tenant_id: tenant }).first('tree_frontier')
  return { nodes, frontier: (head?.tree_frontier ?? []).map((b: Buffer) => b.toString('hex')) }
}

describe('audit Merkle tree on the real database', () => {
  let db: Db
  let tenant: string
  let ctx: ServiceContext
  let rows: Row[]
  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 12 })
    tenant = newTenant('tree')
    ctx = serviceContext(db, tenant, ['owner'])
    // Sequenced in uneven batches, so appends start from every kind of frontier.
    let written = 0
    for (const batch of [1, 1, 2, 3, 1, 5, 8, 1, 1, 13, 4, 2, 7, 21]) {
      for (let j = 0; j < batch; j++, written++) {
        await audit.recordStandalone(db, tenant, ACTOR, { type: 'object.updated', resourceType: 'object', resourceId: `o${written}`, data: { i: written } })
      }
      await audit.sequencePending(db, tenant)
    }
    rows = await chain(db, tenant)
    assert.equal(rows.length, N)
  })
  after(() => db.destroy())

  it('signs a tree head whose root is the RFC 9162 hash of the whole chain', async () => {
    const head = await audit.treeHead(ctx)
    assert.equal(head.treeSize, N)
    assert.deepEqual(Buffer.from(head.rootHash, 'hex'), mth(recomputedLeaves(rows)))
    assert.ok(verifyTreeHead(head))
    assert.equal(verifyTreeHead({ ...head, treeSize: N - 1 }), false, 'another size does not verify')
    assert.equal(verifyTreeHead({ ...head, tenant: 'other' }), false, 'another tenant does not verify')
  })

  it('proves inclusion of every event in every tree size 1..70, checked by an RFC 9162 verifier', async () => {
    const leaves = recomputedLeaves(rows)
    for (let n = 1; n <= N; n++) {
      const root = mth(leaves.slice(0, n))
      for (let m = 0; m < n; m++) {
        const p = await audit.inclusionProof(ctx, rows[m].id, { treeSize: n })
        assert.equal(p.leafIndex, m)
        assert.deepEqual(Buffer.from(p.rootHash, 'hex'), root, `root of ${n}`)
        assert.ok(verifyInclusion(m, n, leafOf(rows[m].hash), hexes(p.auditPath), root), `event ${m + 1} in tree ${n}`)
      }
    }
  })

  it('proves consistency for every pair of sizes 1 <= m <= n <= 70', async () => {
    const leaves = recomputedLeaves(rows)
    const roots = Array.from({ length: N + 1 }, (_, n) => mth(leaves.slice(0, n)))
    for (let n = 1; n <= N; n++) {
      for (let m = 1; m <= n; m++) {
        const p = await audit.consistencyProof(ctx, { first: m, second: n })
        assert.deepEqual([p.firstRootHash, p.secondRootHash], [roots[m].toString('hex'), roots[n].toString('hex')])
        assert.ok(verifyConsistency(m, n, roots[m], roots[n], hexes(p.proof)), `${m} -> ${n}`)
      }
    }
  })

  it('reads a proof in one statement: the event (or the head) and the nodes, keys computed in SQL', async () => {
    const statements: string[] = []
    const count = (q: { sql: string }) => statements.push(q.sql)
    db.on('query', count)
    try {
      await audit.inclusionProof(ctx, rows[40].id)
      await audit.inclusionProof(ctx, rows[40].id, { treeSize: 50 })
      await audit.consistencyProof(ctx, { first: 23, second: 61 })
    } finally {
      db.removeListener('query', count)
    }
    assert.equal(statements.length, 3, statements.join('\n'))
  })

  it('holds exactly the tree that the backfill (audit_tree_rebuild) builds from the events', async () => {
    const incremental = await treeRows(db, tenant)
    assert.equal(await audit.rebuildTree(db, tenant), N)
    assert.deepEqual(await treeRows(db, tenant), incremental)
    assert.equal(incremental.nodes.length, 35 + 17 + 8 + 4 + 2 + 1, "one node per complete subtree of level >= 1")
  })

  it('fails verification after an event or a stored node is tampered with', async () => {
    const kept = await audit.treeHead(ctx)
    const victim = rows[41]
    const p = await audit.inclusionProof(ctx, victim.id)
    await db.raw("UPDATE audit_events SET data = '{\"i\":999}' WHERE tenant_id = ? AND id = ?", [tenant, victim.id])
    try {
      const [tampered] = (await chain(db, tenant)).filter(r => r.id === victim.id)
      const leaf = leafOf(audit.recomputeHash(tampered as never))
      assert.equal(verifyInclusion(41, N, leaf, hexes(p.auditPath), Buffer.from(kept.rootHash, 'hex')), false)
    } finally {
      await db.raw('UPDATE audit_events SET data = ? WHERE tenant_id = ? AND id = ?', [JSON.stringify(victim.data), tenant, victim.id])
    }
    // The stored node over leaves 0..7 rewritten: the proofs that use it no longer reach the kept root.
    const keptRoot = Buffer.from(kept.rootHash, 'hex')
    const before = await audit.inclusionProof(ctx, rows[10].id, { treeSize: N })
    assert.ok(verifyInclusion(10, N, leafOf(rows[10].hash), hexes(before.auditPath), keptRoot))
    await db.raw("UPDATE audit_tree_nodes SET hash = sha256('x') WHERE tenant_id = ? AND level = 3 AND idx = 0", [tenant])
    try {
      const q = await audit.inclusionProof(ctx, rows[10].id, { treeSize: N })
      assert.equal(verifyInclusion(10, N, leafOf(rows[10].hash), hexes(q.auditPath), keptRoot), false)
      const c = await audit.consistencyProof(ctx, { first: 9, second: N })
      assert.equal(verifyConsistency(9, N, mth(recomputedLeaves(rows).slice(0, 9)), keptRoot, hexes(c.proof)), false)
    } finally {
      await audit.rebuildTree(db, tenant)
    }
    assert.equal((await audit.treeHead(ctx)).rootHash, kept.rootHash, 'the rebuild restores the tree')
  })

  it('answers 400 for a tree size outside sequence..head, and 404 for another tenant\'s event', async () => {
    await assert.rejects(audit.inclusionProof(ctx, rows[9].id, { treeSize: 9 }), { code: 'VALIDATION_ERROR' })
    await assert.rejects(audit.inclusionProof(ctx, rows[9].id, { treeSize: N + 1 }), { code: 'VALIDATION_ERROR' })
    await assert.rejects(audit.consistencyProof(ctx, { first: 5, second: 4 }), { code: 'VALIDATION_ERROR' })
    await assert.rejects(audit.consistencyProof(ctx, { first: 5, second: N + 1 }), { code: 'VALIDATION_ERROR' })
    const other = serviceContext(db, newTenant('tree-other'), ['owner'])
    await assert.rejects(audit.inclusionProof(other, rows[9].id), { code: 'NOT_FOUND' })
    const empty = await audit.treeHead(other)
    assert.equal(empty.treeSize, 0)
    assert.deepEqual(Buffer.from(empty.rootHash, 'hex'), mth([]))
    assert.equal((await db('audit_tree_nodes').where({ tenant_id: other.tenantId }).count({ n: '*' }))[0].n, 0)
  })

  it('builds the tree of a chain sequenced without it (older release) before the next append', async () => {
    const t = newTenant('tree-old')
    for (let i = 0; i < 11; i++) await audit.recordStandalone(db, t, ACTOR, { type: 'object.updated', resourceType: 'object', resourceId: `o${i}`, data: { i } })
    await audit.sequencePending(db, t)
    // What a chain looks like before the migration, or after a process of an older release moved the head.
    await db('audit_tree_nodes').where({ tenant_id: t }).delete()
    await db('audit_heads').where({ tenant_id: t }).update({ tree_size: 0, tree_frontier: [] })
    const c = serviceContext(db, t, ['owner'])
    const ids = (await chain(db, t)).map(r => r.id)
    const p = await audit.inclusionProof(c, ids[4])
    assert.equal(p.treeSize, 11, 'the proof request sequenced, which rebuilt the tree first')
    await audit.recordStandalone(db, t, ACTOR, { type: 'object.updated', resourceType: 'object', resourceId: 'last', data: {} })
    const head = await audit.treeHead(c)
    const all = await chain(db, t)
    assert.equal(head.treeSize, 12)
    assert.deepEqual(Buffer.from(head.rootHash, 'hex'), mth(recomputedLeaves(all)))
  })

  it('covers a damaged chain as stored: a removed row is an empty leaf, and /proof reports the break', async () => {
    const t = newTenant('tree-gap')
    for (let i = 0; i < 6; i++) await audit.recordStandalone(db, t, ACTOR, { type: 'object.updated', resourceType: 'object', resourceId: `o${i}`, data: { i } })
    await audit.sequencePending(db, t)
    const rows6 = await chain(db, t)
    await db('audit_events').where({ tenant_id: t, sequence: 3 }).delete()
    await audit.rebuildTree(db, t)
    const c = serviceContext(db, t, ['owner'])
    const inputs = recomputedLeaves(rows6)
    inputs[2] = Buffer.alloc(0)
    const head = await audit.treeHead(c)
    assert.deepEqual(Buffer.from(head.rootHash, 'hex'), mth(inputs))
    const p = await audit.inclusionProof(c, rows6[3].id)
    assert.ok(verifyInclusion(3, 6, leafOf(rows6[3].hash), hexes(p.auditPath), Buffer.from(head.rootHash, 'hex')))
    assert.equal((await audit.proveEvent(c, rows6[3].id)).brokenAt, 3)
  })

  it('keeps the tree consistent with the chain under concurrent writers and racing sequencers', async () => {
    const pools = [db, createDb(TEST_DATABASE_URL, { poolMax: 8 }), createDb(TEST_DATABASE_URL, { poolMax: 8 })]
    const t = newTenant('tree-race')
    try {
      let done = false
      const writers = Promise.all(Array.from({ length: 24 }, async (_, w) => {
        for (let i = 0; i < 10; i++) {
          await audit.recordStandalone(pools[w % 3], t, ACTOR, { type: 'object.updated', resourceType: 'object', resourceId: `w${w}`, data: { i } })
        }
      })).finally(() => { done = true })
      await Promise.all(pools.map(async p => { while (!done) await audit.sequencePending(p, t) }))
      await writers
      await audit.sequencePending(db, t)
      const all = await chain(db, t)
      assert.equal(all.length, 240)
      const c = serviceContext(db, t, ['owner'])
      const head = await audit.treeHead(c)
      assert.deepEqual(Buffer.from(head.rootHash, 'hex'), mth(recomputedLeaves(all)))
      const incremental = await treeRows(db, t)
      await audit.rebuildTree(db, t)
      assert.deepEqual(await treeRows(db, t), incremental)
      for (const m of [0, 99, 239]) {
        const p = await audit.inclusionProof(c, all[m].id)
        assert.ok(verifyInclusion(m, 240, leafOf(all[m].hash), hexes(p.auditPath), Buffer.from(head.rootHash, 'hex')))
      }
    } finally {
      await Promise.all(pools.slice(1).map(p => p.destroy()))
    }
  })
})
