import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createDb, type Db } from '../../lib/db.js'
import { AppError } from '../../lib/errors.js'
import * as objects from '../../lib/objects/index.js'
import * as objectTypes from '../../lib/object-types/index.js'
import * as relations from '../../lib/relations/index.js'
import { newTenant, serviceContext } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import type { ServiceContext } from '../../lib/context.js'

// The batch reads GraphQL's loaders use: one statement for many ids, tenant-scoped, permission-checked.

describe('lib batch reads (getObjectsByIds, getObjectTypesByIds, relationsOfObjects)', () => {
  let db: Db
  let ctx: ServiceContext
  let typeId: string
  const ids: string[] = []
  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 5 })
    ctx = serviceContext(db, newTenant())
    typeId = (await objectTypes.createObjectType(ctx, { key: `b_${randomUUID().slice(0, 8)}`, name: 'B' })).id
    await objectTypes.publishObjectType(ctx, typeId, {})
    for (let i = 0; i < 4; i++) ids.push((await objects.createObject(ctx, { typeId, attributes: { i } })).id)
    // 0 -> 1, 0 -> 2 (type a), 0 -> 3 (type b, then deleted), 1 -> 0
    await relations.createRelation(ctx, { fromObjectId: ids[0], toObjectId: ids[1], relationType: 'a' })
    await relations.createRelation(ctx, { fromObjectId: ids[0], toObjectId: ids[2], relationType: 'a' })
    const gone = await relations.createRelation(ctx, { fromObjectId: ids[0], toObjectId: ids[3], relationType: 'b' })
    await relations.deleteRelation(ctx, gone.id)
    await relations.createRelation(ctx, { fromObjectId: ids[1], toObjectId: ids[0], relationType: 'a' })
  })
  after(() => db.destroy())

  it('getObjectsByIds returns the live objects of the tenant only', async () => {
    const deleted = (await objects.createObject(ctx, { typeId })).id
    await objects.deleteObject(ctx, deleted, null)
    const other = serviceContext(db, newTenant())
    const found = await objects.getObjectsByIds(ctx, [ids[0], ids[1], deleted, 'not-a-uuid', randomUUID()])
    assert.deepEqual([...found.keys()].sort(), [ids[0], ids[1]].sort())
    assert.deepEqual(found.get(ids[0]), await objects.getObject(ctx, ids[0], {}))
    assert.equal((await objects.getObjectsByIds(other, ids)).size, 0)
  })

  it('getObjectTypesByIds returns the types of the tenant only', async () => {
    assert.deepEqual([...(await objectTypes.getObjectTypesByIds(ctx, [typeId, randomUUID()])).keys()], [typeId])
    assert.equal((await objectTypes.getObjectTypesByIds(serviceContext(db, newTenant()), [typeId])).size, 0)
  })

  it('relationsOfObjects groups by object, follows direction, type, deleted and the per-object limit', async () => {
    const all = await relations.relationsOfObjects(ctx, [ids[0], ids[1], ids[3]], { direction: 'all', includeDeleted: false, limit: 100 })
    assert.equal(all.get(ids[0])?.length, 3)
    assert.equal(all.get(ids[1])?.length, 2)
    assert.deepEqual(all.get(ids[3]), [])
    const out = await relations.relationsOfObjects(ctx, [ids[0]], { direction: 'outgoing', includeDeleted: true, limit: 100 })
    assert.deepEqual(out.get(ids[0])?.map(r => relations.otherEnd(r, ids[0])), [ids[1], ids[2], ids[3]])
    const incoming = await relations.relationsOfObjects(ctx, [ids[0]], { direction: 'incoming', relationType: 'a', includeDeleted: false, limit: 100 })
    assert.deepEqual(incoming.get(ids[0])?.map(r => r.fromObjectId), [ids[1]])
    const limited = await relations.relationsOfObjects(ctx, [ids[0], ids[1]], { direction: 'all', includeDeleted: false, limit: 1 })
    assert.deepEqual([limited.get(ids[0])?.length, limited.get(ids[1])?.length], [1, 1])
    assert.equal((await relations.relationsOfObjects(serviceContext(db, newTenant()), [ids[0]], { direction: 'all', includeDeleted: true, limit: 100 })).get(ids[0])?.length, 0)
  })

  it('each is permission-checked once per batch', async () => {
    const none = serviceContext(db, ctx.tenantId, [])
    const calls = [() => objects.getObjectsByIds(none, ids), () => objectTypes.getObjectTypesByIds(none, [typeId]),
      () => relations.relationsOfObjects(none, ids, { direction: 'all', includeDeleted: false, limit: 1 })]
    for (const call of calls) await assert.rejects(call, (err: unknown) => err instanceof AppError && err.code === 'FORBIDDEN')
  })
})
