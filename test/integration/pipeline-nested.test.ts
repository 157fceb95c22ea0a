import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createDb, withTransaction, type Db } from '../../lib/db.js'
import * as outbox from '../../lib/outbox/index.js'
import * as objects from '../../lib/objects/index.js'
import * as objectTypes from '../../lib/object-types/index.js'
import { newTenant, serviceContext } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import type { ServiceContext } from '../../lib/context.js'

// A write nested in a caller's transaction (an automation run applies its effect and records its
// outcome in the run's transaction) has not committed when runWrite returns: the outbox's
// announcement of its events (lib/outbox announceCommitted: a NOTIFY from the pool) must wait for
// the caller's COMMIT. Sent inside the transaction, that NOTIFY took PostgreSQL's database-wide
// notify lock at every run's COMMIT and switched the run's own commit to synchronous_commit=off.

describe('the outbox announcement of a write inside a caller transaction', () => {
  let db: Db
  let ctx: ServiceContext
  let typeId: string
  let unsubscribe = () => {}
  const seen: Array<{ tenant: string | null, visible: number }> = []
  let watch: string | null = null
  const hook = (tenant: string | null): void => {
    if (tenant !== watch) return
    // What another connection sees at this moment: the object's committed version.
    const entry = { tenant, visible: -1 }
    seen.push(entry)
    void db.raw('SELECT coalesce(max(version), 0)::int AS v FROM objects WHERE tenant_id = ?', [tenant]).then(r => { entry.visible = r.rows[0].v })
  }

  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 4 })
    ctx = serviceContext(db, newTenant('nested'))
    const t = await objectTypes.createObjectType(ctx, { key: `n_${randomUUID().slice(0, 8)}`, name: 'Nested' })
    await objectTypes.publishObjectType(ctx, t.id, {})
    typeId = t.id
    unsubscribe = outbox.onCommitted(db, hook)
  })
  after(async () => {
    unsubscribe()
    await new Promise(resolve => setTimeout(resolve, 100))
    await db.destroy()
  })

  it('goes out after the COMMIT, and not at all when the transaction rolls back', async () => {
    const o = await objects.createObject(ctx, { typeId, attributes: {} })
    watch = ctx.tenantId
    seen.length = 0
    let before = seen.length
    // The server's own setting (a throwaway test cluster may run with it off): the transaction must keep it.
    const server = (await db.raw("SELECT current_setting('synchronous_commit') AS s")).rows[0].s
    await withTransaction(db, async tx => {
      await objects.patchObject({ ...ctx, db: tx as unknown as Db }, o.id, { attributes: { a: 1 } }, null)
      before = seen.length
      // No statement of the transaction may be a NOTIFY (nor anything else queued on it).
      const inside = await tx.raw("SELECT current_setting('synchronous_commit') AS s")
      assert.equal(inside.rows[0].s, server, 'the run commits as durably as the server does')
    })
    assert.equal(before, 0, 'nothing ran before the COMMIT')
    assert.equal(seen.length, 1)
    await new Promise(resolve => setTimeout(resolve, 200))
    assert.equal(seen[0].visible, 2, 'the change was visible to other connections')

    seen.length = 0
    await assert.rejects(withTransaction(db, async tx => {
      await objects.patchObject({ ...ctx, db: tx as unknown as Db }, o.id, { attributes: { a: 2 } }, null)
      throw new Error('roll back')
    }), /roll back/)
    assert.equal(seen.length, 0, 'a rolled back write announces nothing')

    // A write on the pool still runs them at once after its own commit.
    await objects.patchObject(ctx, o.id, { attributes: { a: 3 } }, null)
    assert.equal(seen.length, 1)
  })
})

// ctx.deferChanges: a nested write hands its audit, outbox and counter rows to the transaction's
// next folded write by the same actor (an automation run's effect and its outcome: one statement
// less per run), or writes them just before COMMIT; never outside the transaction.
describe('deferred changes of a write inside a caller transaction', () => {
  let db: Db
  let ctx: ServiceContext
  let typeId: string
  const auditOf = async (tenant: string) => (await db.raw('SELECT type, resource_id FROM audit_events WHERE tenant_id = ? ORDER BY arrival', [tenant])).rows as Array<{ type: string, resource_id: string }>
  const eventsOf = async (tenant: string) => (await db.raw('SELECT type, aggregate_id, payload FROM outbox_events WHERE tenant_id = ? ORDER BY position', [tenant])).rows as Array<{ type: string, aggregate_id: string, payload: { causation?: unknown } }>

  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 4 })
    ctx = serviceContext(db, newTenant('deferred'))
    const t = await objectTypes.createObjectType(ctx, { key: `d_${randomUUID().slice(0, 8)}`, name: 'Deferred' })
    await objectTypes.publishObjectType(ctx, t.id, {})
    typeId = t.id
  })
  after(async () => {
    // The last write's objects announcement leaves on the pool up to 20 ms after its commit.
    await new Promise(resolve => setTimeout(resolve, 100))
    await db.destroy()
  })

  it('are written by the next folded write, first and in one statement with it', async () => {
    const o = await objects.createObject(ctx, { typeId, attributes: {} })
    const causation = { depth: 1, ruleId: randomUUID(), runId: randomUUID() }
    let statements = 0
    const count = (): void => { statements++ }
    let created = ''
    await withTransaction(db, async tx => {
      const inner = { ...ctx, db: tx as unknown as Db, causation }
      db.on('query', count)
      await objects.patchObject({ ...inner, deferChanges: true }, o.id, { attributes: { a: 1 } }, null)
      const afterPatch = statements
      created = (await objects.createObject(inner, { typeId, attributes: {} })).id
      db.off('query', count)
      assert.equal(statements - afterPatch, 1, 'the create took the patch\'s rows into its one statement')
      assert.equal(afterPatch, 2, 'the patch itself: the lock and the version, no statement of its changes')
    })
    const audit = await auditOf(ctx.tenantId)
    assert.deepEqual(audit.slice(-2).map(a => [a.type, a.resource_id]), [['object.updated', o.id], ['object.created', created]])
    const events = await eventsOf(ctx.tenantId)
    assert.deepEqual(events.slice(-2).map(e => [e.type, e.aggregate_id]), [['object.updated', o.id], ['object.created', created]])
    assert.deepEqual(events.at(-2)!.payload.causation, causation)
  })

  it('are written before COMMIT when no folded write follows, and not at all on rollback', async () => {
    const o = await objects.createObject(ctx, { typeId, attributes: {} })
    const before = (await auditOf(ctx.tenantId)).length
    await withTransaction(db, async tx => {
      await objects.patchObject({ ...ctx, db: tx as unknown as Db, deferChanges: true }, o.id, { attributes: { a: 1 } }, null)
    })
    const audit = await auditOf(ctx.tenantId)
    assert.equal(audit.length, before + 1)
    assert.deepEqual([audit.at(-1)!.type, audit.at(-1)!.resource_id], ['object.updated', o.id])
    assert.equal((await eventsOf(ctx.tenantId)).filter(e => e.aggregate_id === o.id && e.type === 'object.updated').length, 1)

    await assert.rejects(withTransaction(db, async tx => {
      await objects.patchObject({ ...ctx, db: tx as unknown as Db, deferChanges: true }, o.id, { attributes: { a: 2 } }, null)
      throw new Error('roll back')
    }), /roll back/)
    assert.equal((await auditOf(ctx.tenantId)).length, before + 1, 'a rolled back write leaves no audit event')
  })

  it('are written apart, before, when the next folded write has another actor', async () => {
    const o = await objects.createObject(ctx, { typeId, attributes: {} })
    await withTransaction(db, async tx => {
      await objects.patchObject({ ...ctx, db: tx as unknown as Db, deferChanges: true }, o.id, { attributes: { a: 1 } }, null)
      await objects.createObject({ ...ctx, db: tx as unknown as Db, actor: { sub: 'someone-else', roles: ['owner'] } }, { typeId, attributes: {} })
    })
    const rows = (await db.raw('SELECT type, actor FROM audit_events WHERE tenant_id = ? ORDER BY arrival DESC LIMIT 2', [ctx.tenantId])).rows
    assert.deepEqual(rows.map((r: { type: string, actor: { sub: string } }) => [r.type, r.actor.sub]), [['object.created', 'someone-else'], ['object.updated', 'tester']])
  })
})
