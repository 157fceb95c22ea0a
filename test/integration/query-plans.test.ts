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

  it('plans every statement without parallel workers, whatever the costs say (lib/db createDb)', async () => {
    // With parallel workers costing nothing, the planner scans in parallel wherever it may: the
    // control, with workers allowed again in its transaction, gets a Gather; the service's
    // connections (max_parallel_workers_per_gather 0) plan the same pages, spatial or not, serially.
    const undo = new Error('undo')
    const forced = async (workers: number | null, run: (ctx: ReturnType<typeof serviceContext>) => Promise<void>) => {
      await assert.rejects(db.transaction(async tx => {
        const settings = ['parallel_setup_cost = 0', 'parallel_tuple_cost = 0', 'min_parallel_table_scan_size = 0', 'min_parallel_index_scan_size = 0']
        for (const s of workers === null ? settings : [...settings, `max_parallel_workers_per_gather = ${workers}`]) await tx.raw(`SET LOCAL ${s}`)
        await run(serviceContext(tx as unknown as Db, f.ctx.tenantId))
        throw undo
      }), (err: unknown) => err === undo)
    }
    const attribute = { field: 'attributes.n', operator: 'gte', value: 10 }
    await forced(2, async ctx => {
      assert.match(await plan({ filters: [attribute] }, ctx), /Gather/, 'the control: parallel plans are forced')
    })
    await forced(null, async ctx => {
      const filters = [
        [attribute],
        [{ field: 'geometry', operator: 'bbox', value: [10.5, 50.5, 10.6, 50.6] }, attribute],
        [{ field: 'geometry', operator: 'dwithin', value: point(10.5, 50.5), distanceMeters: 2000 }, attribute],
        [{ field: 'geometry', operator: 'within', value: box(10.5, 50.5, 10.6, 50.6) }, attribute]
      ]
      for (const f of filters) {
        const p = await plan({ filters: f }, ctx)
        assert.doesNotMatch(p, /Gather|Parallel/, `${JSON.stringify(f)}\n${p}`)
      }
    })
  })

  it('plans on connections without JIT compilation (lib/db createDb)', async () => {
    // PostGIS's predicate costs put spatial pages over jit_above_cost; compiling cost more than running.
    const settings = await Promise.all([1, 2, 3].map(() => db.transaction(async tx => (await tx.raw('SHOW jit')).rows[0].jit)))
    assert.deepEqual(settings, ['off', 'off', 'off'])
    assert.equal((await db.raw('SHOW max_parallel_workers_per_gather')).rows[0].max_parallel_workers_per_gather, '0')
  })
})
