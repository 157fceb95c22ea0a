import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { checkDefinition, validateCandidate, type TypeDefinition } from '../../lib/object-types/definition.js'
import { unstorableValue, MAX_JSON_DEPTH } from '../../lib/storable.js'
import { AppError } from '../../lib/errors.js'

function def (over: Partial<TypeDefinition> = {}): TypeDefinition {
  return {
    name: 'Pipe',
    description: null,
    attributeSchema: { type: 'object', properties: { name: { type: 'string' }, height: { type: 'number', minimum: 0 } }, required: ['name'] },
    geometry: { required: false, types: [] },
    validationRules: [],
    workflowId: null,
    publicIdTemplate: null,
    ...over
  }
}

const candidate = (over: Record<string, unknown> = {}) => ({ typeId: 't', attributes: { name: 'a' }, geometry: null, workflowState: null, ...over }) as never

function refused (d: TypeDefinition): { field: string, reason: string } {
  try {
    checkDefinition(d)
  } catch (err) {
    assert.ok(err instanceof AppError)
    assert.equal(err.code, 'VALIDATION_ERROR')
    return err.details as { field: string, reason: string }
  }
  assert.fail('expected checkDefinition to refuse the definition')
}

describe('checkDefinition', () => {
  it('accepts a plain definition, and one without a schema', () => {
    checkDefinition(def())
    checkDefinition(def({ attributeSchema: null }))
  })
  it('refuses a schema whose type is not object', () => {
    assert.equal(refused(def({ attributeSchema: { type: 'array' } })).field, 'attributeSchema.type')
    assert.equal(refused(def({ attributeSchema: { properties: {} } })).field, 'attributeSchema.type')
  })
  it('refuses a schema that does not compile', () => {
    const d = refused(def({ attributeSchema: { type: 'object', properties: { h: { type: 'numbr' } } } }))
    assert.equal(d.field, 'attributeSchema')
    assert.match(d.reason, /not a valid JSON Schema/)
  })
  it('refuses a $ref that does not resolve inside the schema', () => {
    assert.equal(refused(def({ attributeSchema: { type: 'object', properties: { a: { $ref: 'https://example.com/elsewhere' } } } })).field, 'attributeSchema')
  })
  it('lets many definitions share one $id (schemas are compiled in isolation)', () => {
    const s = () => ({ $id: 'https://example.com/pipe', type: 'object', properties: { n: { type: 'string' } } })
    checkDefinition(def({ attributeSchema: s() }))
    checkDefinition(def({ attributeSchema: s() }))
    assert.equal(validateCandidate(def({ attributeSchema: s() }), candidate({ attributes: { n: 1 } }), null)[0]?.field, 'attributes.n')
  })
  it('never resolves a $ref against a schema compiled for another definition', () => {
    checkDefinition(def({ attributeSchema: { $id: 'https://example.com/shared', type: 'object', properties: { secret: { type: 'string' } } } }))
    assert.equal(refused(def({ attributeSchema: { type: 'object', properties: { x: { $ref: 'https://example.com/shared' } } } })).field, 'attributeSchema')
  })
  it('resolves local and recursive $refs inside one schema', () => {
    const schema = {
      $id: 'https://example.com/tree',
      type: 'object',
      definitions: { pos: { type: 'array', items: { type: 'number' }, minItems: 2 } },
      properties: { at: { $ref: '#/definitions/pos' }, child: { $ref: '#' } }
    }
    const d = def({ attributeSchema: schema })
    checkDefinition(d)
    for (const key of [null, `tree:${Math.random()}`]) {
      assert.deepEqual(validateCandidate(d, candidate({ attributes: { at: [1, 2], child: { at: [3, 4] } } }), key), [])
      assert.deepEqual(validateCandidate(d, candidate({ attributes: { at: [1], child: { at: ['x', 4] } } }), key).map(f => f.field).sort(), ['attributes.at', 'attributes.child.at[0]'])
    }
  })

  it('names the path of an unknown JsonLogic operator', () => {
    const d = refused(def({ validationRules: [{ name: 'ok', rule: { '>': [1, 0] }, message: 'm' }, { name: 'bad', rule: { and: [{ '==': [1, 1] }, { frobnicate: [1] }] }, message: 'm' }] }))
    assert.equal(d.field, 'validationRules[1].rule.and[1].frobnicate')
    assert.match(d.reason, /unknown JsonLogic operator/)
  })
  it('refuses two rules with the same name', () => {
    const r = { name: 'same', rule: { '==': [1, 1] }, message: 'm' }
    assert.equal(refused(def({ validationRules: [r, r] })).field, 'validationRules')
  })
  it('refuses unknown publicId tokens and accepts the known ones', () => {
    checkDefinition(def({ publicIdTemplate: 'P-{{type.key}}-{{year}}{{month}}{{day}}-{{seq:5}}-{{seq}}-{{attributes.name}}' }))
    assert.equal(refused(def({ publicIdTemplate: 'P-{{uuid}}' })).field, 'publicIdTemplate')
    assert.equal(refused(def({ publicIdTemplate: 'P-{{seq:100}}' })).field, 'publicIdTemplate')
    assert.equal(refused(def({ publicIdTemplate: '{{attributes.}}' })).field, 'publicIdTemplate')
  })
  it('refuses numbers JSON cannot carry (1e400 parses as Infinity and would be stored as null)', () => {
    assert.equal(refused(def({ attributeSchema: { type: 'object', properties: { h: { type: 'number', maximum: Infinity } } } })).field, 'attributeSchema.properties.h.maximum')
  })
})

describe('validateCandidate', () => {
  it('reports every attribute fault, each with its attributes.<name> path', () => {
    const faults = validateCandidate(def(), candidate({ attributes: { height: -1, name: 5 } }), null)
    assert.deepEqual(faults.map(f => f.field).sort(), ['attributes.height', 'attributes.name'])
    assert.deepEqual(validateCandidate(def(), candidate({ attributes: {} }), null).map(f => f.field), ['attributes.name'])
  })
  it('reports geometry faults together with attribute faults', () => {
    const faults = validateCandidate(def(), candidate({ attributes: {}, geometry: { type: 'Point', coordinates: [200, 0] } }), null)
    assert.deepEqual(faults.map(f => f.field), ['attributes.name', 'geometry.coordinates[0]'])
  })
  it('requires geometry when the type says so, and only of an allowed type', () => {
    const d = def({ geometry: { required: true, types: ['Point'] } })
    assert.deepEqual(validateCandidate(d, candidate(), null).map(f => f.field), ['geometry'])
    assert.deepEqual(validateCandidate(d, candidate({ geometry: { type: 'LineString', coordinates: [[0, 0], [1, 1]] } }), null).map(f => f.field), ['geometry.type'])
    assert.deepEqual(validateCandidate(d, candidate({ geometry: { type: 'Point', coordinates: [0, 0] } }), null), [])
  })
  it('refuses elevations, which the 2D geometry column cannot store', () => {
    const faults = validateCandidate(def(), candidate({ geometry: { type: 'Point', coordinates: [1, 2, 3] } }), null)
    assert.deepEqual(faults.map(f => f.field), ['geometry.coordinates'])
  })
  it('refuses attribute values the database cannot store exactly (Infinity, NUL characters)', () => {
    const free = def({ attributeSchema: null })
    assert.deepEqual(validateCandidate(free, candidate({ attributes: { a: { b: [1, Infinity] } } }), null).map(f => f.field), ['attributes.a.b[1]'])
    assert.deepEqual(validateCandidate(free, candidate({ attributes: { s: 'a\u0000b' } }), null).map(f => f.field), ['attributes.s'])
    assert.deepEqual(validateCandidate(free, candidate({ attributes: { 'k\u0000': 1 } }), null).map(f => f.field), ['attributes'])
    assert.deepEqual(validateCandidate(free, candidate({ attributes: { s: ['ok 😀', 'bad \ud800'] } }), null).map(f => f.field), ['attributes.s[1]'])
  })
  it('runs the JsonLogic rules on the candidate and returns their messages', () => {
    const d = def({
      validationRules: [
        { name: 'tall', rule: { '>': [{ var: 'attributes.height' }, 10] }, message: 'height must exceed 10' },
        { name: 'typed', rule: { '==': [{ var: 'typeId' }, 't'] }, message: 'sees the typeId' }
      ]
    })
    assert.deepEqual(validateCandidate(d, candidate({ attributes: { name: 'a', height: 3 } }), null), [{ field: 'validationRules.tall', reason: 'height must exceed 10' }])
    assert.deepEqual(validateCandidate(d, candidate({ attributes: { name: 'a', height: 30 } }), null), [])
  })
  it('caches validators of published versions by key and still validates correctly', () => {
    const key = `cache-test:${Math.random()}`
    assert.equal(validateCandidate(def(), candidate({ attributes: {} }), key).length, 1)
    assert.equal(validateCandidate(def(), candidate({ attributes: { name: 'x' } }), key).length, 0)
  })
})

describe('unstorableValue', () => {
  const nested = (depth: number): unknown => depth === 0 ? 1 : { a: nested(depth - 1) }
  it(`accepts nesting up to ${MAX_JSON_DEPTH} levels and refuses deeper values without recursing through them`, () => {
    assert.equal(unstorableValue(nested(MAX_JSON_DEPTH), 'attributes'), null)
    const f = unstorableValue(nested(MAX_JSON_DEPTH + 1), 'attributes')
    assert.match(f?.reason ?? '', /deeper than/)
    let deep: unknown = 1
    for (let i = 0; i < 200_000; i++) deep = [deep]
    assert.match(unstorableValue(deep, 'attributes')?.reason ?? '', /deeper than/)
  })
})
