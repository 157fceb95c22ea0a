import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { AppError } from '../../lib/errors.js'
import { fromListParams, parseRunQuery } from '../../lib/queries/parse.js'
import { LIMITS } from '../../lib/queries/fields.js'

function fieldOf (fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof AppError, String(err))
    assert.equal(err.code, 'VALIDATION_ERROR')
    return String(err.details.field)
  }
  assert.fail('expected a VALIDATION_ERROR')
}

describe('parseRunQuery (filter JSON -> typed tree)', () => {
  it('maps each short form to the same node as its long form', () => {
    for (const [short, long] of [['eq', 'equals'], ['ne', 'notEquals'], ['gt', 'greaterThan'], ['gte', 'greaterThanOrEqual'], ['lt', 'lessThan'], ['lte', 'lessThanOrEqual']]) {
      const a = parseRunQuery({ filters: [{ field: 'attributes.h', operator: short, value: 1 }] })
      const b = parseRunQuery({ filters: [{ field: 'attributes.h', operator: long, value: 1 }] })
      assert.deepEqual(a.filter, b.filter, short)
      assert.equal(a.filter?.kind, 'compare')
    }
  })

  it('ANDs top-level filters and keeps and/or/not as typed nodes', () => {
    const q = parseRunQuery({
      filters: [
        { field: 'typeId', operator: 'in', value: ['00000000-0000-4000-8000-000000000000'] },
        { operator: 'not', filters: [{ operator: 'or', filters: [{ field: 'geometry', operator: 'bbox', value: [0, 0, 1, 1] }, { field: 'attributes.a.b', operator: 'isNull' }] }] }
      ]
    })
    assert.equal(q.filter?.kind, 'and')
    const [inNode, notNode] = (q.filter as { children: any[] }).children
    assert.deepEqual(inNode, { kind: 'in', field: inNode.field, negate: false, values: ['00000000-0000-4000-8000-000000000000'] })
    assert.equal(notNode.kind, 'not')
    assert.equal(notNode.children[0].kind, 'or')
    assert.deepEqual(notNode.children[0].children[0], { kind: 'bbox', bounds: [0, 0, 1, 1] })
    assert.deepEqual(notNode.children[0].children[1].field, { kind: 'attribute', name: 'attributes.a.b', path: ['a', 'b'] })
  })

  it('chooses contains by field: text on strings, spatial on geometry', () => {
    assert.equal(parseRunQuery({ filters: [{ field: 'attributes.n', operator: 'contains', value: 'x' }] }).filter?.kind, 'text')
    assert.equal(parseRunQuery({ filters: [{ field: 'geometry', operator: 'contains', value: { type: 'Point', coordinates: [0, 0] } }] }).filter?.kind, 'spatial')
  })

  it('fills defaults: limit 100, offset 0, sort createdAt asc, graph maxDepth 1 and direction all', () => {
    const q = parseRunQuery(undefined)
    assert.equal(q.limit, 100)
    assert.equal(q.offset, 0)
    assert.equal(q.filter, null)
    assert.deepEqual(q.sorts.map(s => [s.field.name, s.order]), [['createdAt', 'asc']])
    const g = parseRunQuery({ graph: {} }).graph
    assert.deepEqual(g, { objectIds: null, maxDepth: 1, relationTypes: null, direction: 'all' })
  })

  it('names the path of the fault at any depth', () => {
    assert.equal(fieldOf(() => parseRunQuery({ filters: [{ operator: 'or', filters: [{ field: 'id', operator: 'exists' }, { operator: 'and', filters: [{ field: 'attributes.x', operator: 'gt' }] }] }] })), 'filters[0].filters[1].filters[0].value')
    assert.equal(fieldOf(() => parseRunQuery({ filters: [{ field: 'geometry', operator: 'within', value: { type: 'Point', coordinates: [0, 0], crs: {} } }] })), 'filters[0].value.crs')
    assert.equal(fieldOf(() => parseRunQuery({ filters: [{ field: 'geometry', operator: 'dwithin', value: { type: 'Point', coordinates: [0, 0] }, distanceMeters: LIMITS.distanceMeters + 1 }] })), 'filters[0].distanceMeters')
    assert.equal(fieldOf(() => parseRunQuery({ filters: [{ field: 'attributes.x', operator: 'eq', value: 1, distanceMeters: 1 }] })), 'filters[0].distanceMeters')
  })

  it('enforces the documented bounds', () => {
    let deep: unknown = { field: 'id', operator: 'exists' }
    for (let i = 0; i < LIMITS.depth; i++) deep = { operator: 'and', filters: [deep] }
    parseRunQuery({ filters: [deep] })
    assert.match(fieldOf(() => parseRunQuery({ filters: [{ operator: 'and', filters: [deep] }] })), /^filters\[0\](\.filters\[0\]){8}$/)
    const leaves = Array.from({ length: LIMITS.nodes }, () => ({ field: 'id', operator: 'exists' }))
    assert.equal(fieldOf(() => parseRunQuery({ filters: [{ operator: 'or', filters: leaves }] })), `filters[0].filters[${LIMITS.nodes - 1}]`)
    assert.equal(fieldOf(() => parseRunQuery({ filters: [{ field: `attributes.${'a.'.repeat(8)}a`, operator: 'exists' }] })), 'filters[0].field')
    assert.equal(fieldOf(() => parseRunQuery({ filters: [{ field: `attributes.${'k'.repeat(129)}`, operator: 'exists' }] })), 'filters[0].field')
    assert.equal(fieldOf(() => parseRunQuery({ graph: { objectIds: ['00000000-0000-4000-8000-000000000000'] }, aggregations: [{ field: '*', function: 'count' }] })), 'aggregations')
  })
})

describe('fromListParams (GET /v1/queries/objects)', () => {
  it('turns typeId and status into equality filters and sortBy into the sort', () => {
    const q = fromListParams({ typeId: '00000000-0000-4000-8000-000000000000', status: 'approved', limit: 5, offset: 1, sortBy: 'attributes.rank', sortOrder: 'desc' })
    assert.equal(q.filter?.kind, 'and')
    const [t, st] = (q.filter as { children: any[] }).children
    assert.deepEqual([t.field.name, t.op, t.value], ['typeId', 'eq', '00000000-0000-4000-8000-000000000000'])
    assert.deepEqual([st.field.name, st.op, st.value], ['workflowState', 'eq', 'approved'])
    assert.deepEqual(q.sorts.map(s => [s.field.name, s.order]), [['attributes.rank', 'desc']])
    assert.equal(fieldOf(() => fromListParams({ limit: 1, offset: 0, sortBy: 'geometry', sortOrder: 'asc' })), 'sortBy')
  })
})
