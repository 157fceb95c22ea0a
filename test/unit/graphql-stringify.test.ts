import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { stringifyResult } from '../../server/graphql/index.js'

// server/graphql stringifyResult: a result's JSON text, written a root field at a time so a large
// document does not hold the API's thread in one JSON.stringify.

describe('GraphQL result text', () => {
  it('is the same JSON as JSON.stringify gives, with errors and extensions, and with no data', async () => {
    const results = [
      { data: { a: { items: [{ id: '1', attributes: { note: 'x"y\\z' } }] }, b: null, 'c-d': [1, 2] } },
      { errors: [{ message: 'no', path: ['b'], extensions: { code: 'NOT_FOUND' } }], data: { a: 1, b: null }, extensions: { cost: 3 } },
      { errors: [{ message: 'refused' }] },
      { data: null, errors: [{ message: 'refused' }] },
      { data: {} }
    ]
    for (const r of results) assert.deepEqual(JSON.parse(await stringifyResult(r)), JSON.parse(JSON.stringify(r)))
  })

  it('lets the event loop turn between root fields', async () => {
    let turned = false
    setImmediate(() => { turned = true })
    await stringifyResult({ data: { a: 1, b: 2 } })
    assert.equal(turned, true)
  })
})
