import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createDb, withTransaction, type Db } from '../../lib/db.js'
import { writeHooks } from '../../lib/pipeline.js'
import * as objects from '../../lib/objects/index.js'
import * as objectTypes from '../../lib/object-types/index.js'
import { newTenant, serviceContext } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import type { ServiceContext } from '../../lib/context.js'

// A write nested in a caller's transaction (an automation run applies its effect and records its
// outcome in the run's transaction) has not committed when runWrite returns: its after-commit
// hooks (the objects announcement, a NOTIFY) must wait for the caller's COMMIT and run on the
// pool. Run inside the transaction, that NOTIFY took PostgreSQL's database-wide notify lock at
// every run's COMMIT and switched the run's own commit to synchronous_commit=off.

describe('after-commit hooks of a write inside a caller transaction', () => {
  let db: Db
  let ctx: ServiceContext
  let typeId: string
  const seen: Array<{ tenant: string, inTransaction: boolean, visible: number }> = []
  let watch: string | null = null
  const hook = (c: ServiceContext): void => {
    if (c.tenantId !== watch) return
    // What another connection sees at this moment: the object's committed version.
    const entry = { tenant: c.tenantId, inTransaction: c.db.isTransaction === true, visible: -1 }
    seen.push(entry)
    void db.raw('SELECT coalesce(max(version), 0)::int AS v FROM objects WHERE tenant_id = ?', [c.tenantId]).then(r => { entry.visible = r.rows[0].v })
  }

  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 4 })
    ctx = serviceContext(db, newTenant('nested'))
    const t = await objectTypes.createObjectType(ctx, { key: `n_${randomUUID().slice(0, 8)}`, name: 'Nested' })
    await objectTypes.publishObjectType(ctx, t.id, {})
    typeId = t.id
    writeHooks.afterCommit.push(hook)
  })
  after(async () => {
    writeHooks.afterCommit.splice(writeHooks.afterCommit.indexOf(hook), 1)
    await db.destroy()
  })

  it('run after the COMMIT, on the pool, and not at all when the transaction rolls back', async () => {
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
    assert.equal(seen[0].inTransaction, false, 'the hook got the pool')
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
    assert.equal(seen[0].inTransaction, false)
  })
})
