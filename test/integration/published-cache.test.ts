import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, type Db } from '../../lib/db.js'
import * as objectTypes from '../../lib/object-types/index.js'
import * as objects from '../../lib/objects/index.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { newTenant, serviceContext } from '../support/harness.js'

// Object creates validate against a cached published definition and insert on condition that it
// is still the published one. These tests change the type behind the cache's back, as another
// API process would, and check that creates follow the database, not the cache.
describe('object create with a stale published-type cache', () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 4 }) })
  after(() => db.destroy())

  async function typeRequiring (tenant: string, field: string): Promise<string> {
    const ctx = serviceContext(db, tenant)
    const t = await objectTypes.createObjectType(ctx, {
      key: 'cached', name: 'Cached', publicIdTemplate: 'C-{{seq}}',
      attributeSchema: { type: 'object', required: [field], properties: { [field]: { type: 'string' } } }
    })
    await objectTypes.publishObjectType(ctx, t.id, { to: 'published' })
    return t.id
  }

  /** Publishes version 2 requiring `field`, directly in SQL (another process's publish). */
  async function publishBehindTheCache (typeId: string, tenant: string, field: string): Promise<void> {
    const [v1] = (await db.raw('SELECT definition FROM object_type_versions WHERE type_id = ? AND version = 1', [typeId])).rows
    const definition = { ...v1.definition, attributeSchema: { type: 'object', required: [field], properties: { [field]: { type: 'string' } } } }
    await db.raw(`INSERT INTO object_type_versions (type_id, tenant_id, version, status, definition, published_at, sandbox_at)
      VALUES (?, ?, 2, 'published', ?::jsonb, now(), now())`, [typeId, tenant, JSON.stringify(definition)])
    await db.raw('UPDATE object_types SET latest_version = 2, published_version = 2 WHERE id = ?', [typeId])
  }

  it('validates against the newly published version, and writes type_version 2', async () => {
    const tenant = newTenant('cache')
    const ctx = serviceContext(db, tenant)
    const typeId = await typeRequiring(tenant, 'a')
    const first = await objects.createObject(ctx, { typeId, attributes: { a: 'x' } })
    assert.equal(first.publicId, 'C-1')
    await publishBehindTheCache(typeId, tenant, 'b')
    await assert.rejects(objects.createObject(ctx, { typeId, attributes: { a: 'x' } }), (err: { code: string, details: { field: string } }) =>
      err.code === 'VALIDATION_ERROR' && err.details.field === 'attributes.b')
    const second = await objects.createObject(ctx, { typeId, attributes: { b: 'y' } })
    const [row] = (await db.raw('SELECT type_version FROM objects WHERE id = ?', [second.id])).rows
    assert.equal(row.type_version, 2)
    assert.equal(second.publicId, 'C-2', 'the refused create and the retry used no extra sequence number')
  })

  it('refuses a create once the type was deleted elsewhere, writing nothing', async () => {
    const tenant = newTenant('cache')
    const ctx = serviceContext(db, tenant)
    const typeId = await typeRequiring(tenant, 'a')
    await objects.createObject(ctx, { typeId, attributes: { a: 'x' } })
    await db.raw('UPDATE object_types SET deleted_at = now() WHERE id = ?', [typeId])
    await assert.rejects(objects.createObject(ctx, { typeId, attributes: { a: 'x' } }), (err: { code: string, details: { field: string } }) =>
      err.code === 'VALIDATION_ERROR' && err.details.field === 'typeId')
    const [{ n }] = (await db.raw('SELECT count(*)::int AS n FROM objects WHERE tenant_id = ?', [tenant])).rows
    assert.equal(n, 1)
  })

  // A patch reads the version its type publishes in the statement that locks the object, and the
  // definition from the cache only when the cache holds that version.
  it('validates a patch against the newly published version, and refuses it once the type is deleted', async () => {
    const tenant = newTenant('cache')
    const ctx = serviceContext(db, tenant)
    const typeId = await typeRequiring(tenant, 'a')
    const o = await objects.createObject(ctx, { typeId, attributes: { a: 'x' } })
    await objects.patchObject(ctx, o.id, { attributes: { a: 'y' } }, null) // the cache holds version 1
    await publishBehindTheCache(typeId, tenant, 'b')
    await assert.rejects(objects.patchObject(ctx, o.id, { attributes: { a: 'z' } }, null), (err: { code: string, details: { field: string } }) =>
      err.code === 'VALIDATION_ERROR' && err.details.field === 'attributes.b')
    const patched = await objects.patchObject(ctx, o.id, { attributes: { a: null, b: 'w' } }, null)
    assert.deepEqual(patched.attributes, { b: 'w' })
    await db.raw('UPDATE object_types SET deleted_at = now() WHERE id = ?', [typeId])
    await assert.rejects(objects.patchObject(ctx, o.id, { attributes: { b: 'v' } }, null), (err: { code: string, details: { field: string } }) =>
      err.code === 'VALIDATION_ERROR' && err.details.field === 'typeId')
  })
})
