import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createDb, type Db } from '../../lib/db.js'
import * as counters from '../../lib/counters/index.js'
import * as objects from '../../lib/objects/index.js'
import * as objectTypes from '../../lib/object-types/index.js'
import { newTenant, serviceContext } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import type { ServiceContext } from '../../lib/context.js'

async function newType (ctx: ServiceContext, attributeSchema?: object): Promise<string> {
  const t = await objectTypes.createObjectType(ctx, { key: `c_${randomUUID().slice(0, 8)}`, name: 'Counted', ...(attributeSchema ? { attributeSchema } : {}) })
  await objectTypes.publishObjectType(ctx, t.id, {})
  return t.id
}

async function rows (db: Db, tenant: string): Promise<number> {
  // The object counters only (creating the type also counts it, under object_types).
  const r = await db.raw('SELECT count(*)::int AS n FROM counter_deltas WHERE tenant_id = ? AND counter IN (?, ?)', [tenant, counters.OBJECTS, counters.OBJECT_CHANGES])
  return r.rows[0].n
}

describe('lib/counters', () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 20 }) })
  after(() => db.destroy())

  it('counts live objects per type and changes per type in the writing transaction', async () => {
    const ctx = serviceContext(db, newTenant('count'))
    const [a, b] = [await newType(ctx), await newType(ctx)]
    const made = await Promise.all([a, a, a, b].map(typeId => objects.createObject(ctx, { typeId, attributes: {} })))
    await objects.patchObject(ctx, made[0].id, { attributes: { x: 1 } }, 1)
    await objects.deleteObject(ctx, made[1].id, null)
    assert.equal(await counters.total(db, ctx.tenantId, counters.OBJECTS), 3)
    assert.equal(await counters.total(db, ctx.tenantId, counters.OBJECTS, [a]), 2)
    assert.equal(await counters.total(db, ctx.tenantId, counters.OBJECTS, [b]), 1)
    assert.deepEqual(Object.fromEntries(await counters.totalsByBucket(db, ctx.tenantId, counters.OBJECT_CHANGES)), { [a]: 5, [b]: 1 })
    assert.equal(await counters.total(db, newTenant('other'), counters.OBJECTS), 0, 'another tenant sees nothing')
  })

  it('a refused write adds no delta', async () => {
    const ctx = serviceContext(db, newTenant('count'))
    const typeId = await newType(ctx, { type: 'object', required: ['name'], properties: { name: { type: 'string' } } })
    await assert.rejects(objects.createObject(ctx, { typeId, attributes: {} }), /name/)
    assert.equal(await rows(db, ctx.tenantId), 0)
  })

  it('stays exact under 40 concurrent creates, and folding keeps every total while leaving one row per group', async () => {
    const ctx = serviceContext(db, newTenant('count'))
    const typeId = await newType(ctx)
    await Promise.all(Array.from({ length: 40 }, () => objects.createObject(ctx, { typeId, attributes: {} })))
    assert.equal(await counters.total(db, ctx.tenantId, counters.OBJECTS), 40)
    assert.equal(await rows(db, ctx.tenantId), 80)
    // Fold while more creates commit: the total is whatever committed, never more or less.
    const [folded] = await Promise.all([
      counters.fold(db, { tenantId: ctx.tenantId, minRows: 1 }),
      ...Array.from({ length: 10 }, () => objects.createObject(ctx, { typeId, attributes: {} }))
    ])
    assert.ok(folded >= 0)
    await counters.fold(db, { tenantId: ctx.tenantId, minRows: 1 })
    assert.equal(await counters.total(db, ctx.tenantId, counters.OBJECTS), 50)
    assert.equal(await counters.total(db, ctx.tenantId, counters.OBJECT_CHANGES), 50)
    assert.equal(await rows(db, ctx.tenantId), 2, 'one row for each of the two groups')
  })

  it('skips a tenant whose fold lock a write holds, and vacuum leaves every total as it was', async () => {
    const ctx = serviceContext(db, newTenant('count'))
    const typeId = await newType(ctx)
    await Promise.all(Array.from({ length: 20 }, () => objects.createObject(ctx, { typeId, attributes: {} })))
    await db.transaction(async tx => {
      // What license_quota_shared takes before it folds a counter inside a write.
      await tx.raw("SELECT pg_advisory_xact_lock(hashtext(?), hashtext('counters.fold'))", [ctx.tenantId])
      assert.equal(await counters.fold(db, { tenantId: ctx.tenantId, minRows: 1 }), 0)
    })
    assert.equal(await counters.fold(db, { tenantId: ctx.tenantId, minRows: 1 }), 2)
    await counters.vacuum(db)
    assert.equal(await counters.total(db, ctx.tenantId, counters.OBJECTS), 20)
    assert.equal(await rows(db, ctx.tenantId), 2)
  })
})
