import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createDb, type Db } from '../../lib/db.js'
import { AppError } from '../../lib/errors.js'
import { runWrite } from '../../lib/pipeline.js'
import * as objects from '../../lib/objects/index.js'
import * as objectTypes from '../../lib/object-types/index.js'
import { newTenant, serviceContext } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { eventsFor, point } from '../fixtures/objects.js'
import type { ServiceContext } from '../../lib/context.js'

// The lib-level surface other modules build on (workflows, automation, queries, layers):
// lockForChange, writeVersion, recordObjectChange, objectSource, sortExpression, findPublished.

async function rejects (p: Promise<unknown>, code: string): Promise<AppError> {
  try {
    await p
  } catch (err) {
    assert.ok(err instanceof AppError, String(err))
    assert.equal(err.code, code)
    return err
  }
  assert.fail(`expected ${code}`)
}

describe('lib/objects', () => {
  let db: Db
  let ctx: ServiceContext
  let typeId: string
  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 10 })
    ctx = serviceContext(db, newTenant())
    const t = await objectTypes.createObjectType(ctx, { key: `int_${randomUUID().slice(0, 8)}`, name: 'Int' })
    await objectTypes.publishObjectType(ctx, t.id, {})
    typeId = t.id
  })
  after(() => db.destroy())

  it('lockForChange finds the live object, checks the version, and answers NOT_FOUND otherwise', async () => {
    const o = await objects.createObject(ctx, { typeId, attributes: { n: 1 } })
    await runWrite(ctx, { resource: 'objects', action: 'write' }, async w => {
      const row = await objects.lockForChange(ctx, w.tx, o.id, 1)
      assert.equal(row.version, 1)
      assert.equal((await objects.lockForChange(ctx, w.tx, o.id, null)).id, o.id)
    })
    const conflict = await rejects(runWrite(ctx, { resource: 'objects', action: 'write' }, w => objects.lockForChange(ctx, w.tx, o.id, 4)), 'VERSION_CONFLICT')
    assert.equal(conflict.details.currentVersion, 1)
    await rejects(runWrite(ctx, { resource: 'objects', action: 'write' }, w => objects.lockForChange(ctx, w.tx, 'nope', null)), 'NOT_FOUND')
    const foreign = serviceContext(db, newTenant())
    await rejects(runWrite(foreign, { resource: 'objects', action: 'write' }, w => objects.lockForChange(foreign, w.tx, o.id, null)), 'NOT_FOUND')
  })

  it('writeVersion appends version N+1, keeps the geometry when it is undefined, and closes version N', async () => {
    const o = await objects.createObject(ctx, { typeId, attributes: { n: 1 }, geometry: point(3, 4) })
    const next = await runWrite(ctx, { resource: 'objects', action: 'transition' }, async w => {
      const current = await objects.lockForChange(ctx, w.tx, o.id, 1)
      const row = await objects.writeVersion(w.tx, current, { operation: 'transitioned', attributes: current.attributes, geometry: undefined, workflowState: 'review', validFrom: null, actor: { sub: 'wf', roles: [] } })
      objects.recordObjectChange(w, 'transitioned', row, { from: null, to: 'review' }, current)
      return row
    })
    assert.equal(next.version, 2)
    assert.equal(next.workflow_state, 'review')
    assert.deepEqual(next.geometry, point(3, 4))
    const h = await objects.objectHistory(ctx, o.id, { limit: 10, offset: 0 })
    assert.deepEqual(h.items.map(v => [v.version, v.operation]), [[1, 'created'], [2, 'transitioned']])
    assert.equal(h.items[0].txTo, h.items[1].txFrom)
    assert.deepEqual(h.items[1].actor, { sub: 'wf', roles: [] })
    assert.deepEqual(await eventsFor(db, ctx.tenantId, o.id), { audit: ['object.created', 'workflow.transitioned'], outbox: ['object.created', 'object.transitioned'] })
  })

  it('a write that throws after writeVersion leaves no version, audit or outbox row behind', async () => {
    const o = await objects.createObject(ctx, { typeId, attributes: { n: 1 } })
    await assert.rejects(runWrite(ctx, { resource: 'objects', action: 'write' }, async w => {
      const current = await objects.lockForChange(ctx, w.tx, o.id, 1)
      const row = await objects.writeVersion(w.tx, current, { operation: 'updated', attributes: { n: 2 }, geometry: undefined, workflowState: null, validFrom: null, actor: {} })
      objects.recordObjectChange(w, 'updated', row)
      throw new Error('boom')
    }), /boom/)
    assert.equal((await objects.getObject(ctx, o.id, {})).version, 1)
    assert.deepEqual(await eventsFor(db, ctx.tenantId, o.id), { audit: ['object.created'], outbox: ['object.created'] })
  })

  it('objectSource yields one row per object now, asOf and validAt, and only for the tenant', async () => {
    const t2 = await objectTypes.createObjectType(ctx, { key: `src_${randomUUID().slice(0, 8)}`, name: 'Src' })
    await objectTypes.publishObjectType(ctx, t2.id, {})
    const a = await objects.createObject(ctx, { typeId: t2.id, attributes: { n: 1 }, validFrom: '2020-01-01T00:00:00.000Z' })
    await objects.patchObject(ctx, a.id, { attributes: { n: 2 }, validFrom: '2021-01-01T00:00:00.000Z' }, 1)
    const b = await objects.createObject(ctx, { typeId: t2.id, attributes: { n: 9 } })
    await objects.deleteObject(ctx, b.id, null)
    const count = async (t: objects.TimePoint) => {
      const src = objects.objectSource([ctx.tenantId], t)
      const r = await db.raw(`SELECT o.id, o.attributes FROM ${src.sql} o WHERE o.type_id = ? ORDER BY o.id`, [...src.params, t2.id])
      return r.rows.map((x: { attributes: { n: number } }) => x.attributes.n)
    }
    assert.deepEqual(await count({}), [2])
    assert.deepEqual((await count({ asOf: b.createdAt })).sort(), [2, 9])
    assert.deepEqual(await count({ validAt: '2020-06-01T00:00:00.000Z' }), [1])
    assert.deepEqual(await count({ validAt: '2100-01-01T00:00:00.000Z' }), [2])
    const other = objects.objectSource([newTenant()], {})
    assert.equal((await db.raw(`SELECT count(*)::int AS n FROM ${other.sql} o`, other.params)).rows[0].n, 0)
  })

  it('sortExpression maps fields to columns and binds attribute paths instead of splicing them', () => {
    assert.deepEqual(objects.sortExpression('createdAt'), { expr: 'o.created_at', params: [], nullable: false, unique: false })
    assert.equal(objects.sortExpression('publicId').unique, true)
    assert.equal(objects.sortExpression('workflowState').nullable, true)
    const attr = objects.sortExpression("attributes.a'b.c")
    assert.equal(attr.expr, 'o.attributes #> ?::text[]')
    assert.deepEqual(attr.params, [["a'b", 'c']])
    assert.throws(() => objects.sortExpression('geometry'), (e: unknown) => e instanceof AppError && e.code === 'VALIDATION_ERROR')
  })

  it('findPublished answers null for a draft type, a foreign tenant and a deleted type', async () => {
    const draft = await objectTypes.createObjectType(ctx, { key: `fp_${randomUUID().slice(0, 8)}`, name: 'FP' })
    assert.equal(await objectTypes.findPublished(db, ctx.tenantId, draft.id), null)
    await objectTypes.publishObjectType(ctx, draft.id, {})
    const pub = await objectTypes.findPublished(db, ctx.tenantId, draft.id)
    assert.equal(pub?.version, 1)
    assert.equal(pub?.key, draft.key)
    assert.equal(await objectTypes.findPublished(db, newTenant(), draft.id), null)
    await objectTypes.deleteObjectType(ctx, draft.id)
    assert.equal(await objectTypes.findPublished(db, ctx.tenantId, draft.id), null)
  })

  it('checks permissions in lib, not only in routes', async () => {
    const viewer = serviceContext(db, ctx.tenantId, ['viewer'])
    await rejects(objects.createObject(viewer, { typeId }), 'FORBIDDEN')
    await rejects(objectTypes.createObjectType(viewer, { key: 'nope', name: 'x' }), 'FORBIDDEN')
    const none = serviceContext(db, ctx.tenantId, [])
    await rejects(objects.listObjects(none, { limit: 10, offset: 0, sortBy: 'createdAt', sortOrder: 'asc' }), 'FORBIDDEN')
  })
})
