import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { checkWorkflowDefinition, normalizeDefinition, ruleReferences, transitionsFrom, type WorkflowDefinition } from '../../lib/workflows/definition.js'
import { isAppError } from '../../lib/errors.js'

function def (over: Partial<WorkflowDefinition> = {}): WorkflowDefinition {
  return normalizeDefinition({
    name: 'w',
    initialState: 'a',
    states: [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'end', final: true }],
    transitions: [
      { from: ['a'], targetState: 'b', guards: [] },
      { from: ['a', 'b'], targetState: 'c', guards: [] },
      { from: '*', targetState: 'end', guards: [] }
    ],
    ...over
  })
}

function faultOf (d: WorkflowDefinition): { field: string, reason: string } | null {
  try {
    checkWorkflowDefinition(d)
    return null
  } catch (err) {
    if (isAppError(err)) return err.details as { field: string, reason: string }
    throw err
  }
}

describe('checkWorkflowDefinition', () => {
  it('accepts a well-formed definition', () => {
    assert.equal(faultOf(def()), null)
  })

  it('names the duplicate of a "*" transition that also covers an explicit source', () => {
    const f = faultOf(def({ transitions: [{ from: '*', targetState: 'c', guards: [] }, { from: ['b'], targetState: 'c', guards: [] }] }))
    assert.deepEqual(f, { field: 'transitions[1]', reason: 'duplicates transitions[0]: both move from "b" to "c"' })
  })

  it('names two "*" transitions to one target', () => {
    const f = faultOf(def({ transitions: [{ from: '*', targetState: 'end', guards: [] }, { from: '*', targetState: 'end', guards: [] }] }))
    assert.equal(f?.field, 'transitions[1]')
  })

  it('allows an explicit self-loop', () => {
    assert.equal(faultOf(def({ transitions: [{ from: ['a'], targetState: 'a', guards: [] }] })), null)
  })

  it('names the fault inside a spatial guard', () => {
    const f = faultOf(def({ transitions: [{ from: ['a'], targetState: 'b', guards: [{ type: 'spatial', operator: 'within', geometry: { type: 'Point', coordinates: [0, 95] } }] }] }))
    assert.deepEqual(f, { field: 'transitions[0].guards[0].geometry.coordinates[1]', reason: 'latitude must be between -90 and 90' })
  })

  it('refuses distanceMeters on an operator other than dwithin', () => {
    const f = faultOf(def({ transitions: [{ from: ['a'], targetState: 'b', guards: [{ type: 'spatial', operator: 'intersects', geometry: { type: 'Point', coordinates: [0, 0] }, distanceMeters: 5 }] }] }))
    assert.equal(f?.field, 'transitions[0].guards[0].distanceMeters')
  })

  it('refuses a jsonlogic guard without rule', () => {
    const f = faultOf(def({ transitions: [{ from: ['a'], targetState: 'b', guards: [{ type: 'jsonlogic', message: 'x' } as never] }] }))
    assert.equal(f?.field, 'transitions[0].guards[0].rule')
  })
})

describe('transitionsFrom', () => {
  const d = def()
  it('lists explicit and "*" transitions from a state, in definition order', () => {
    assert.deepEqual(transitionsFrom(d, 'a').map(t => t.targetState), ['b', 'c', 'end'])
    assert.deepEqual(transitionsFrom(d, 'b').map(t => t.targetState), ['c', 'end'])
  })

  it('gives a final state no transitions', () => {
    assert.deepEqual(transitionsFrom(d, 'end'), [])
  })

  it('lets "*" rescue a state a later version no longer declares', () => {
    assert.deepEqual(transitionsFrom(d, 'retired').map(t => t.targetState), ['end'])
  })

  it('does not turn "*" into a self-loop', () => {
    const loop = def({ transitions: [{ from: '*', targetState: 'b', guards: [] }] })
    assert.deepEqual(transitionsFrom(loop, 'b'), [])
    assert.deepEqual(transitionsFrom(loop, 'a').map(t => t.targetState), ['b'])
  })
})

describe('ruleReferences', () => {
  it('gives each rule guard with its path', () => {
    const d = def({ transitions: [{ from: ['a'], targetState: 'b', guards: [{ type: 'permission', requiredRole: 'x' }, { type: 'rule', ruleId: 'r1' }] }] })
    assert.deepEqual(ruleReferences(d), [{ ruleId: 'r1', path: 'transitions[0].guards[1].ruleId' }])
  })
})
