import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, type Db } from '../../lib/db.js'
import * as objects from '../../lib/objects/index.js'
import * as queries from '../../lib/queries/index.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { fixture, type Fixture } from './query-fixtures.js'

// docs/behaviour.md "Objects": every documented sort, in both directions, reads its page from an index:
// the plan holds no Sort (nor Incremental Sort) node over the tenant's set. 20,000 objects make a
// sort of the whole set clearly visible to the planner.
const SORTS = ['id', 'publicId', 'typeId', 'workflowState', 'createdAt', 'updatedAt'] as const

describe('object lists: every documented sort uses an index', () => {
  let db: Db
  let f: Fixture

  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 5 })
    f = await fixture(db, 'sortplan')
    await db.raw(`
      INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, workflow_state, version, valid_from, created_at, updated_at)
      SELECT gen_random_uuid(), ?, ?, 1, 'P-' || i, jsonb_build_object('n', i), CASE WHEN i % 3 = 0 THEN NULL ELSE 's' || (i % 7) END, 1,
        now(), now() - i * interval '1 second', now() - (i % 977) * interval '1 second'
      FROM generate_series(0, 19999) i`, [f.ctx.tenantId, f.typeId])
    // Rows inserted by hand carry the counter row the write pipeline would have added.
    await db.raw("INSERT INTO counter_deltas (tenant_id, counter, bucket, delta) VALUES (?, 'objects', ?, 20000)", [f.ctx.tenantId, f.typeId])
    await db.raw('ANALYZE objects')
  })
  after(() => db.destroy())

  const assertIndexed = (p: string, what: string) => {
    assert.doesNotMatch(p, /Sort/, `${what}\n${p}`)
    assert.match(p, /Index (Only )?Scan/, `${what}\n${p}`)
  }

  for (const sortBy of SORTS) {
    for (const sortOrder of ['asc', 'desc'] as const) {
      it(`GET /v1/objects sortBy=${sortBy} ${sortOrder}`, async () => {
        assertIndexed(await objects.explainList(f.ctx, { limit: 100, offset: 0, sortBy, sortOrder }), `${sortBy} ${sortOrder}`)
      })
      it(`GET /v1/queries/objects sortBy=${sortBy} ${sortOrder}`, async () => {
        assertIndexed(await queries.explainQuery(f.ctx, { sorts: [{ field: sortBy, order: sortOrder }], limit: 100 }), `${sortBy} ${sortOrder}`)
      })
    }
  }

  it('the default order within one type uses objects_tenant_type_created', async () => {
    for (const sortOrder of ['asc', 'desc'] as const) {
      const p = await objects.explainList(f.ctx, { limit: 100, offset: 0, typeId: f.typeId, sortBy: 'createdAt', sortOrder })
      assertIndexed(p, sortOrder)
      assert.match(p, /objects_tenant_type_created/, p)
    }
  })

  it('a first page of a common size is costed for its page in its generic plan; deeper pages stay bound', async () => {
    // With LIMIT and OFFSET bound, a prepared list's generic plan is costed for a tenth of the
    // tenant's rows, so PostgreSQL plans it again on every page (custom plans). A first page of a
    // common size carries its LIMIT as a literal: its generic plan is costed for one page.
    const one = createDb(TEST_DATABASE_URL, { poolMax: 1 }) // one connection: its prepared statements are the ones read below
    try {
      const ctx = { ...f.ctx, db: one }
      await objects.listObjects(ctx, { limit: 100, offset: 0, sortBy: 'createdAt', sortOrder: 'desc' })
      await objects.listObjects(ctx, { limit: 100, offset: 100, sortBy: 'createdAt', sortOrder: 'desc' })
      const plans = (await one.raw("SELECT name, statement, parameter_types::text[] AS types FROM pg_prepared_statements WHERE name LIKE 'objects.list.%'")).rows as Array<{ name: string, statement: string, types: string[] }>
      const first = plans.find(p => /LIMIT 101\s*\)/.test(p.statement))
      const deeper = plans.find(p => /LIMIT \$\d+ OFFSET \$\d+/.test(p.statement))
      assert.ok(first !== undefined && deeper !== undefined, JSON.stringify(plans.map(p => p.statement)))
      // The deeper page's generic plan is costed for a guess (a tenth of an average tenant's rows).
      const limitRows = async (p: { name: string, types: string[] }) => {
        const args = p.types.map(t => t === 'text' ? `'${f.ctx.tenantId}'` : '100').join(', ')
        await one.raw('SET plan_cache_mode = force_generic_plan')
        const plan = (await one.raw(`EXPLAIN EXECUTE "${p.name}"(${args})`)).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n')
        await one.raw('RESET plan_cache_mode')
        return Number(/Limit {2}\(cost=[0-9.]+ rows=(\d+)/.exec(plan)?.[1])
      }
      assert.equal(await limitRows(first), 101)
    } finally {
      await one.destroy()
    }
  })

  it('the page still comes in the documented order (nulls last both ways, then id)', async () => {
    for (const sortOrder of ['asc', 'desc'] as const) {
      const r = await objects.listObjects(f.ctx, { limit: 1000, offset: 6000, sortBy: 'workflowState', sortOrder })
      const states = r.items.map(o => o.workflowState)
      const firstNull = states.indexOf(null)
      assert.ok(firstNull === -1 || states.slice(firstNull).every(s => s === null), 'nulls come last')
      assert.equal(r.pagination.total, 20000)
    }
  })

  it('a filtered total is exact up to 10,000 and the planner\'s estimate above, flagged totalExact: false', async () => {
    const small = await f.run({ filters: [{ field: 'attributes.n', operator: 'lt', value: 10000 }], limit: 10 })
    assert.deepEqual(small.pagination, { limit: 10, offset: 0, total: 10000, hasMore: true })
    const large = await f.run({ filters: [{ field: 'attributes.n', operator: 'gte', value: 0 }], limit: 10 })
    assert.equal(large.pagination.totalExact, false)
    assert.equal(large.pagination.hasMore, true)
    assert.ok(large.pagination.total > 10000, String(large.pagination.total))
    const asOf = await objects.listObjects(f.ctx, { limit: 10, offset: 0, sortBy: 'createdAt', sortOrder: 'asc', asOf: new Date().toISOString() })
    assert.equal(asOf.pagination.total, 0, 'rows inserted by hand have no history')
    assert.equal(asOf.pagination.totalExact, undefined)
  })
})
