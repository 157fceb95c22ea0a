import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mergePatch } from '../../lib/objects/merge-patch.js'

// RFC 7396 Appendix A, row by row: [original, patch, result].
const RFC_EXAMPLES: Array<[unknown, unknown, unknown]> = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [['a', 'b'], ['c', 'd'], ['c', 'd']],
  [{ a: 'b' }, ['c'], ['c']],
  [{ a: 'foo' }, null, null],
  [{ a: 'foo' }, 'bar', 'bar'],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: 'b', c: null }, { a: 'b' }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }]
]

describe('mergePatch (RFC 7396)', () => {
  for (const [i, [original, patch, result]] of RFC_EXAMPLES.entries()) {
    it(`gives the RFC result for example ${i + 1}: ${JSON.stringify(original)} + ${JSON.stringify(patch)}`, () => {
      assert.deepEqual(mergePatch(original, patch), result)
    })
  }

  it('leaves the original untouched', () => {
    const original = { a: { b: 1, c: [1, 2] }, d: 'x' }
    const copy = structuredClone(original)
    mergePatch(original, { a: { b: null, c: [3] }, d: null })
    assert.deepEqual(original, copy)
  })

  it('keeps a "__proto__" key as data and never touches Object.prototype', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}')
    const merged = mergePatch({ y: 2 }, patch) as Record<string, unknown>
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
    assert.equal(Object.getPrototypeOf(merged), Object.prototype)
    assert.deepEqual(JSON.parse(JSON.stringify(merged)), JSON.parse('{"y": 2, "__proto__": {"polluted": true}, "x": 1}'))
  })

  it('merges into an existing "__proto__" key and removes it with null', () => {
    const target = JSON.parse('{"__proto__": {"a": 1}}')
    assert.equal(JSON.stringify(mergePatch(target, JSON.parse('{"__proto__": {"b": 2}}'))), '{"__proto__":{"a":1,"b":2}}')
    assert.equal(JSON.stringify(mergePatch(target, JSON.parse('{"__proto__": null}'))), '{}')
  })
})
