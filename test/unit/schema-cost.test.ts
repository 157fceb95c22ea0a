import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Ajv } from 'ajv'
import { validateCandidate, type TypeDefinition } from '../../lib/object-types/definition.js'

// Our uniqueItems (lib/object-types/schema-cost.ts) must call equal exactly what ajv's does, and
// name the same pair, only in linear time.

const def = (attributeSchema: Record<string, unknown>): TypeDefinition => ({
  name: 't', description: null, attributeSchema, geometry: { required: false, types: [] }, validationRules: [], workflowId: null, publicIdTemplate: null
})
const stock = new Ajv({ allErrors: true }).compile({ type: 'array', uniqueItems: true })

describe('uniqueItems of tenant schemas', () => {
  const cases: unknown[][] = [
    [1, 1.0], [0, -0], ['1', 1], [null, null], [true, 1], [{}, []], [[1, 2], [2, 1]], [[1, 2], [1, 2]],
    [{ a: 1, b: 2 }, { b: 2, a: 1 }], [{ a: 1 }, { a: 1, b: undefined }], [{ a: [1, { c: 'x' }] }, { a: [1, { c: 'x' }] }],
    [{ a: { b: 1 } }, { a: { b: 2 } }], ['a', 'b', 'c', 'a'], [1, 2, 3], [], ['é', 'e\u0301']
  ]
  for (const list of cases) {
    it(`agrees with ajv on ${JSON.stringify(list)}`, () => {
      const faults = validateCandidate(def({ type: 'object', properties: { l: { type: 'array', uniqueItems: true } } }), { typeId: 't', attributes: { l: list }, geometry: null, workflowState: null }, null)
      const ok = stock(list)
      assert.equal(faults.length === 0, ok)
      if (!ok) assert.deepEqual(faults, [{ field: 'attributes.l', reason: stock.errors?.[0].message }])
    })
  }
})
