import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { parseRunQuery } from '../../lib/queries/parse.js'
import { aggregateList, compileFilter, orderBy } from '../../lib/queries/compile.js'
import type { Fragment } from '../../lib/queries/fragment.js'

const compile = (...filters: unknown[]): Fragment => {
  const q = parseRunQuery({ filters })
  assert.ok(q.filter)
  return compileFilter(q.filter)
}

const placeholders = (f: Fragment) => (f.text.match(/\?/g) ?? []).length

describe('compileFilter (typed tree -> parameterised SQL)', () => {
  const hostile = "x'); DROP TABLE objects; --"

  it('never puts a client value or attribute name into the SQL text', () => {
    const f = compile(
      { field: `attributes.${hostile}`, operator: 'eq', value: hostile },
      { field: 'attributes.n', operator: 'in', value: [hostile, 1, true] },
      { field: 'attributes.n', operator: 'contains', value: hostile },
      { field: 'publicId', operator: 'startsWith', value: hostile },
      { field: 'workflowState', operator: 'notIn', value: [hostile] },
      { field: 'geometry', operator: 'dwithin', value: { type: 'Point', coordinates: [1.25, 2.5] }, distanceMeters: 123.5 },
      { field: 'geometry', operator: 'bbox', value: [0.125, 0.25, 1.125, 1.25] }
    )
    assert.ok(!f.text.includes('DROP'), f.text)
    assert.ok(!f.text.includes('1.25') && !f.text.includes('123.5') && !f.text.includes('0.125'), f.text)
    assert.equal(placeholders(f), f.params.length)
    assert.ok(f.params.some(p => Array.isArray(p) && p[0] === hostile), 'attribute path and notIn list are bound arrays')
    assert.ok(f.params.includes(JSON.stringify(hostile)), 'the equals value is a bound jsonb text')
    assert.ok(f.params.includes(`${hostile}%`), 'the startsWith pattern is bound')
  })

  it('escapes LIKE wildcards so contains, startsWith and endsWith are literal', () => {
    const contains = compile({ field: 'publicId', operator: 'contains', value: '50%_off\\' })
    assert.deepEqual(contains.params, ['%50\\%\\_off\\\\%'])
    assert.deepEqual(compile({ field: 'publicId', operator: 'startsWith', value: 'a_' }).params, ['a\\_%'])
    assert.deepEqual(compile({ field: 'publicId', operator: 'endsWith', value: 'z' }).params, ['%z'])
  })

  it('negates with IS NOT TRUE so absent values satisfy notEquals, notIn and not', () => {
    assert.match(compile({ field: 'attributes.a', operator: 'ne', value: 1 }).text, /IS NOT TRUE/)
    assert.match(compile({ field: 'attributes.a', operator: 'notIn', value: [1] }).text, /IS NOT TRUE/)
    assert.match(compile({ operator: 'not', filters: [{ field: 'id', operator: 'exists' }] }).text, /IS NOT TRUE/)
  })

  it('guards order comparisons by JSON type instead of casting stored values', () => {
    const f = compile({ field: 'attributes.h', operator: 'gt', value: 5 })
    assert.match(f.text, /jsonb_typeof/)
    assert.ok(!/::numeric/.test(f.text), f.text)
    assert.deepEqual(f.params, [['h'], 'number', ['h'], '5'])
  })

  it('uses GIN containment for attribute equality except on numeric keys', () => {
    const f = compile({ field: 'attributes.a.b', operator: 'eq', value: 'x' })
    assert.match(f.text, /o\.attributes @> \?::jsonb/)
    assert.ok(f.params.includes('{"a":{"b":"x"}}'))
    assert.doesNotMatch(compile({ field: 'attributes.tags.0', operator: 'eq', value: 'x' }).text, /@>/)
  })

  it('compiles bbox to && on ST_MakeEnvelope and dwithin to geography meters on the sphere', () => {
    assert.match(compile({ field: 'geometry', operator: 'bbox', value: [0, 0, 1, 1] }).text, /o\.geom && ST_MakeEnvelope/)
    assert.match(compile({ field: 'geometry', operator: 'dwithin', value: { type: 'Point', coordinates: [0, 0] }, distanceMeters: 5 }).text, /ST_DWithin\(o\.geom::geography, .*, false\)/)
  })
})

describe('orderBy and aggregateList', () => {
  it('appends id as the tie-breaker and keeps NULLS LAST off NOT NULL columns', () => {
    const q = parseRunQuery({ sorts: [{ field: 'createdAt', order: 'desc' }, { field: 'attributes.x' }] })
    const f = orderBy(q.sorts)
    assert.equal(f.text, 'o.created_at DESC, (o.attributes #> ?::text[]) ASC NULLS LAST, o.id DESC')
    assert.deepEqual(f.params, [['x']])
    assert.equal(orderBy(parseRunQuery({ sorts: [{ field: 'id' }] }).sorts).text, 'o.id ASC')
  })

  it('aliases aggregates a0, a1... and counts present, non-null values', () => {
    const q = parseRunQuery({ aggregations: [{ field: '*', function: 'count' }, { field: 'attributes.h', function: 'avg' }, { field: 'updatedAt', function: 'max' }] })
    const f = aggregateList(q.aggregations)
    assert.match(f.text, /^count\(\*\) AS a0, avg\(CASE WHEN jsonb_typeof.* AS a1, max\(o\.updated_at\) AS a2$/)
    assert.equal(placeholders(f), f.params.length)
  })
})
