import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, type Db } from '../../lib/db.js'
import * as objects from '../../lib/objects/index.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { fixture, type Fixture } from './query-fixtures.js'

// Every comparison operator (and its short form) on attributes and columns, the presence
// operators, nesting of and/or/not, sorts, paging and aggregations, against a small known set.
describe('query service: operators on the real database', () => {
  let db: Db
  let f: Fixture
  const id: Record<string, string> = {}
  const created: Record<string, string> = {}

  /** The keys (a..e) of the objects the filters select, sorted. */
  async function keys (...filters: unknown[]): Promise<string[]> {
    const r = await f.run({ filters, limit: 1000 })
    return r.items.map((o: { attributes: { key: string } }) => o.attributes.key).sort()
  }

  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 5 })
    f = await fixture(db, 'qops')
    const rows: Array<[string, Record<string, unknown>]> = [
      ['a', { code: 'a1', name: 'alpha', height: 10, tags: ['x', 'y'], nested: { level: 1 }, note: null, flag: false }],
      ['b', { code: 'b2', name: 'beta', height: 20.5, nested: { level: 2 }, flag: true }],
      ['c', { code: 'c3', name: 'gamma_%', height: '30' }],
      ['d', { code: 'd4', name: "O'Brien \\ back", height: 5 }],
      ['e', {}]
    ]
    for (const [key, attributes] of rows) {
      id[key] = await f.object({ key, ...attributes })
      created[key] = (await objects.getObject(f.ctx, id[key], {})).createdAt
    }
  })
  after(() => db.destroy())

  it('equals / eq: numbers numerically, strings as text, booleans, nested keys, array positions', async () => {
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'equals', value: 10 }), ['a'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'eq', value: 10.0 }), ['a'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'eq', value: '30' }), ['c'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'eq', value: 30 }), [])
    assert.deepEqual(await keys({ field: 'attributes.name', operator: 'eq', value: "O'Brien \\ back" }), ['d'])
    assert.deepEqual(await keys({ field: 'attributes.flag', operator: 'eq', value: false }), ['a'])
    assert.deepEqual(await keys({ field: 'attributes.nested.level', operator: 'eq', value: 2 }), ['b'])
    assert.deepEqual(await keys({ field: 'attributes.tags.0', operator: 'eq', value: 'x' }), ['a'])
  })

  it('notEquals / ne is the complement of equals (objects lacking the attribute match)', async () => {
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'notEquals', value: 10 }), ['b', 'c', 'd', 'e'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'ne', value: 10 }), ['b', 'c', 'd', 'e'])
  })

  it('in and notIn take arrays of scalars', async () => {
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'in', value: [10, 5, '30'] }), ['a', 'c', 'd'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'notIn', value: [10, 5] }), ['b', 'c', 'e'])
    assert.deepEqual(await keys({ field: 'attributes.name', operator: 'in', value: ["O'Brien \\ back", 'x"y'] }), ['d'])
  })

  it('greaterThan, greaterThanOrEqual, lessThan, lessThanOrEqual and short forms: numbers never match strings', async () => {
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'greaterThan', value: 5 }), ['a', 'b'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'gt', value: 5 }), ['a', 'b'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'greaterThanOrEqual', value: 10 }), ['a', 'b'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'gte', value: 10 }), ['a', 'b'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'lessThan', value: 10 }), ['d'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'lt', value: 10 }), ['d'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'lessThanOrEqual', value: 10 }), ['a', 'd'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'lte', value: 10 }), ['a', 'd'])
    assert.deepEqual(await keys({ field: 'attributes.code', operator: 'gt', value: 'b2' }), ['c', 'd'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'gte', value: '3' }), ['c'])
  })

  it('contains, startsWith, endsWith take the text literally (% and _ are not wildcards)', async () => {
    assert.deepEqual(await keys({ field: 'attributes.name', operator: 'contains', value: '_%' }), ['c'])
    assert.deepEqual(await keys({ field: 'attributes.name', operator: 'contains', value: 'ph' }), ['a'])
    assert.deepEqual(await keys({ field: 'attributes.name', operator: 'startsWith', value: 'be' }), ['b'])
    assert.deepEqual(await keys({ field: 'attributes.name', operator: 'endsWith', value: '\\ back' }), ['d'])
    assert.deepEqual(await keys({ field: 'attributes.name', operator: 'contains', value: "'" }), ['d'])
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'contains', value: '3' }), ['c'])
    assert.deepEqual(await keys({ field: 'publicId', operator: 'startsWith', value: id.a.slice(0, 13) }), ['a'])
  })

  it('exists, notExists, isNull and isNotNull distinguish an absent key from JSON null', async () => {
    assert.deepEqual(await keys({ field: 'attributes.note', operator: 'exists' }), ['a'])
    assert.deepEqual(await keys({ field: 'attributes.note', operator: 'notExists' }), ['b', 'c', 'd', 'e'])
    assert.deepEqual(await keys({ field: 'attributes.note', operator: 'isNull' }), ['a', 'b', 'c', 'd', 'e'])
    assert.deepEqual(await keys({ field: 'attributes.note', operator: 'isNotNull' }), [])
    assert.deepEqual(await keys({ field: 'attributes.nested.level', operator: 'isNotNull' }), ['a', 'b'])
    assert.deepEqual(await keys({ field: 'attributes.nested.level', operator: 'isNull', value: null }), ['c', 'd', 'e'])
    assert.deepEqual(await keys({ field: 'workflowState', operator: 'isNull' }), ['a', 'b', 'c', 'd', 'e'])
    assert.deepEqual(await keys({ field: 'geometry', operator: 'notExists' }), ['a', 'b', 'c', 'd', 'e'])
  })

  it('filters the columns id, typeId, publicId, createdAt and updatedAt', async () => {
    assert.deepEqual(await keys({ field: 'id', operator: 'eq', value: id.b }), ['b'])
    assert.deepEqual(await keys({ field: 'id', operator: 'in', value: [id.a, id.e] }), ['a', 'e'])
    assert.deepEqual(await keys({ field: 'id', operator: 'notIn', value: [id.a, id.e] }), ['b', 'c', 'd'])
    assert.deepEqual(await keys({ field: 'typeId', operator: 'eq', value: f.typeId }), ['a', 'b', 'c', 'd', 'e'])
    assert.deepEqual(await keys({ field: 'publicId', operator: 'eq', value: id.c }), ['c'])
    assert.deepEqual(await keys({ field: 'createdAt', operator: 'gte', value: created.c }), ['c', 'd', 'e'])
    assert.deepEqual(await keys({ field: 'createdAt', operator: 'lt', value: created.c }), ['a', 'b'])
    assert.deepEqual(await keys({ field: 'createdAt', operator: 'eq', value: created.d }), ['d'])
    assert.deepEqual(await keys({ field: 'updatedAt', operator: 'lte', value: created.b.replace('Z', '+00:00') }), ['a', 'b'])
  })

  it('combines top-level filters with AND and nests and/or/not to any allowed depth', async () => {
    assert.deepEqual(await keys({ field: 'attributes.height', operator: 'gte', value: 5 }, { field: 'attributes.flag', operator: 'exists' }), ['a', 'b'])
    const either = {
      operator: 'or',
      filters: [
        { field: 'attributes.height', operator: 'gt', value: 15 },
        { operator: 'and', filters: [{ field: 'attributes.name', operator: 'startsWith', value: 'a' }, { operator: 'not', filters: [{ field: 'attributes.flag', operator: 'eq', value: true }] }] }
      ]
    }
    assert.deepEqual(await keys(either), ['a', 'b'])
    assert.deepEqual(await keys({ operator: 'not', filters: [either] }), ['c', 'd', 'e'])
    let deep: unknown = { field: 'attributes.key', operator: 'eq', value: 'e' }
    for (let i = 0; i < 8; i++) deep = { operator: i % 2 === 0 ? 'and' : 'or', filters: [deep] }
    assert.deepEqual(await keys(deep), ['e'])
    assert.deepEqual(await keys({ operator: 'not', filters: [{ field: 'attributes.height', operator: 'gt', value: 5 }, { field: 'attributes.flag', operator: 'eq', value: true }] }), ['a', 'c', 'd', 'e'])
  })

  it('sorts by several keys (earlier first) with id as tie-breaker, and pages', async () => {
    const byHeight = await f.run({ sorts: [{ field: 'attributes.height', order: 'desc' }] })
    assert.deepEqual(byHeight.items.map((o: any) => o.attributes.key), ['b', 'a', 'd', 'c', 'e'])
    const multi = await f.run({ sorts: [{ field: 'attributes.flag', order: 'desc' }, { field: 'attributes.code' }] })
    assert.deepEqual(multi.items.map((o: any) => o.attributes.key), ['b', 'a', 'c', 'd', 'e'])
    const paged = await f.run({ sorts: [{ field: 'attributes.code', order: 'asc' }], limit: 2, offset: 2 })
    assert.deepEqual(paged.items.map((o: any) => o.attributes.key), ['c', 'd'])
    assert.deepEqual(paged.pagination, { limit: 2, offset: 2, total: 5, hasMore: true })
    const dflt = await f.run({})
    assert.deepEqual(dflt.items.map((o: any) => o.attributes.key), ['a', 'b', 'c', 'd', 'e'])
    assert.equal(dflt.items[0].objectId, dflt.items[0].id)
    assert.equal(dflt.aggregations, undefined)
  })

  it('aggregates count, sum, avg, min and max over the whole filtered set, not the page', async () => {
    const r = await f.run({
      filters: [{ field: 'attributes.key', operator: 'in', value: ['a', 'b', 'c', 'd'] }],
      limit: 1,
      aggregations: [
        { field: '*', function: 'count' }, { field: 'attributes.height', function: 'count' }, { field: 'attributes.flag', function: 'count' },
        { field: 'attributes.height', function: 'sum' }, { field: 'attributes.height', function: 'avg' },
        { field: 'attributes.height', function: 'min' }, { field: 'attributes.height', function: 'max' },
        { field: 'createdAt', function: 'min' }, { field: 'attributes.missing', function: 'sum' }, { field: 'publicId', function: 'max' }
      ]
    })
    assert.equal(r.items.length, 1)
    assert.equal(r.pagination.total, 4)
    const v = r.aggregations.map((a: any) => a.value)
    assert.deepEqual(v.slice(0, 3), [4, 4, 2])
    assert.equal(v[3], 35.5)
    assert.ok(Math.abs(v[4] - 35.5 / 3) < 1e-9)
    assert.deepEqual(v.slice(5, 10), [5, 20.5, created.a, null, [id.a, id.b, id.c, id.d].sort().at(-1)])
    assert.deepEqual(r.aggregations[0], { field: '*', function: 'count', value: 4 })
  })

  it('reads the state as of a past transaction time (asOf)', async () => {
    const t = await f.object({ key: 'tt', height: 1 })
    const before = (await objects.getObject(f.ctx, t, {})).updatedAt
    await objects.patchObject(f.ctx, t, { attributes: { height: 2 } }, 1)
    const now = await f.run({ filters: [{ field: 'attributes.key', operator: 'eq', value: 'tt' }] })
    assert.equal(now.items[0].attributes.height, 2)
    const then = await f.run({ filters: [{ field: 'attributes.height', operator: 'eq', value: 1 }], asOf: before })
    assert.deepEqual(then.items.map((o: any) => o.id), [t])
    await objects.deleteObject(f.ctx, t, null)
    assert.equal((await f.run({ filters: [{ field: 'id', operator: 'eq', value: t }] })).pagination.total, 0)
    assert.equal((await f.run({ filters: [{ field: 'id', operator: 'eq', value: t }], asOf: before })).pagination.total, 1)
    assert.equal((await f.run({ filters: [{ field: 'id', operator: 'eq', value: t }], asOf: '2000-01-01T00:00:00.000Z' })).pagination.total, 0)
  })
})
