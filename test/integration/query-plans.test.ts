import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, type Db } from '../../lib/db.js'
import * as queries from '../../lib/queries/index.js'
import { serviceContext } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { box, fixture, point, type Fixture } from './query-fixtures.js'

// The compiled statements use the indexes: GiST on geom for bbox/within, the geography
// expression index for dwithin, GIN for attribute equality, and a tenant-led expression index on a
// hot attribute for range comparisons (tenant-led: other tests' rows share the table, so an index
// on the expression alone competes with the tenant indexes on planner statistics). 20,000 points make index scans clearly cheaper than a scan.
describe('query service: plans use the indexes', () => {
  let db: Db
  let f: Fixture

  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 5 })
    f = await fixture(db, 'qplan')
    await db.raw(`
      INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, version, valid_from, created_at, updated_at)
      SELECT gen_random_uuid(), ?, ?, 1, gen_random_uuid()::text, jsonb_build_object('n', i, 'hot', i % 1000),
        ST_SetSRID(ST_MakePoint(10 + (i % 200) / 100.0, 50 + (i / 200) / 100.0), 4326), 1, now(), now(), now()
      FROM generate_series(0, 19999) i`, [f.ctx.tenantId, f.typeId])
    await db.raw('ANALYZE objects')
  })
  after(() => db.destroy())

  const plan = (body: unknown, ctx = f.ctx) => queries.explainQuery(ctx, body)

  it('bbox uses objects_tenant_geom_gist', async () => {
    const p = await plan({ filters: [{ field: 'geometry', operator: 'bbox', value: [10.5, 50.5, 10.6, 50.6] }] })
    assert.match(p, /objects_tenant_geom_gist/, p)
    const r = await f.run({ filters: [{ field: 'geometry', operator: 'bbox', value: [10.5, 50.5, 10.6, 50.6] }] })
    assert.equal(r.pagination.total, 121)
  })

  it('within and intersects use objects_tenant_geom_gist', async () => {
    for (const operator of ['within', 'intersects']) {
      const p = await plan({ filters: [{ field: 'geometry', operator, value: box(10.5, 50.5, 10.6, 50.6) }] })
      assert.match(p, /objects_tenant_geom_gist/, `${operator}\n${p}`)
    }
  })

  it('dwithin uses the geography index objects_tenant_geog_gist', async () => {
    const p = await plan({ filters: [{ field: 'geometry', operator: 'dwithin', value: point(10.5, 50.5), distanceMeters: 2000 }] })
    assert.match(p, /objects_tenant_geog_gist/, p)
  })

  it('attribute equality uses the GIN index objects_attributes_gin', async () => {
    const p = await plan({ filters: [{ field: 'attributes.n', operator: 'eq', value: 12345 }] })
    assert.match(p, /objects_attributes_gin/, p)
    assert.equal((await f.run({ filters: [{ field: 'attributes.n', operator: 'eq', value: 12345 }] })).pagination.total, 1)
  })

  it('a range filter on a hot attribute uses an expression index on (tenant_id, attributes #> \'{hot}\')', async () => {
    // Inside a transaction that is rolled back: the index never exists for anyone else.
    const undo = new Error('undo')
    await assert.rejects(db.transaction(async tx => {
      await tx.raw("CREATE INDEX objects_hot_tmp ON objects (tenant_id, (attributes #> '{hot}'))")
      await tx.raw('ANALYZE objects')
      const ctx = serviceContext(tx as unknown as Db, f.ctx.tenantId)
      const p = await plan({ filters: [{ field: 'attributes.hot', operator: 'gte', value: 998 }] }, ctx)
      assert.match(p, /objects_hot_tmp/, p)
      throw undo
    }), (err: unknown) => err === undo)
  })

  it('plans a statement that tests geometry without parallel workers, whatever the costs say', async () => {
    // With parallel workers costing nothing, the planner scans in parallel wherever it may: the
    // attribute filter's page gets a Gather, the spatial ones none.
    const undo = new Error('undo')
    await assert.rejects(db.transaction(async tx => {
      for (const s of ['parallel_setup_cost = 0', 'parallel_tuple_cost = 0', 'min_parallel_table_scan_size = 0', 'min_parallel_index_scan_size = 0']) await tx.raw(`SET LOCAL ${s}`)
      const ctx = serviceContext(tx as unknown as Db, f.ctx.tenantId)
      assert.match(await plan({ filters: [{ field: 'attributes.n', operator: 'gte', value: 10 }] }, ctx), /Gather/, 'the control: parallel plans are forced')
      const spatial = [
        { field: 'geometry', operator: 'bbox', value: [10.5, 50.5, 10.6, 50.6] },
        { field: 'geometry', operator: 'dwithin', value: point(10.5, 50.5), distanceMeters: 2000 },
        { field: 'geometry', operator: 'within', value: box(10.5, 50.5, 10.6, 50.6) }
      ]
      for (const filter of spatial) {
        const p = await plan({ filters: [filter, { field: 'attributes.n', operator: 'gte', value: 10 }] }, ctx)
        assert.doesNotMatch(p, /Gather|Parallel/, `${filter.operator}\n${p}`)
      }
      throw undo
    }), (err: unknown) => err === undo)
  })

  it('plans on connections without JIT compilation (lib/db createDb)', async () => {
    // PostGIS's predicate costs put spatial pages over jit_above_cost; compiling cost more than running.
    const settings = await Promise.all([1, 2, 3].map(() => db.transaction(async tx => (await tx.raw('SHOW jit')).rows[0].jit)))
    assert.deepEqual(settings, ['off', 'off', 'off'])
  })
})
