import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { newTenant, publishedType, startServer, type Client, type TestServer } from '../support/harness.js'
import { timed } from '../support/timing.js'

// Attribute schemas are written by tenants and run on the main thread: each keyword's cost must
// grow with the attributes, not faster (lib/object-types/schema-cost.ts). ajv's uniqueItems
// compared every pair of items (5,000 objects: 0.6 s; 50,000: minutes), and anyOf branches over a
// recursive definition multiplied at every level (20 levels: out of memory).


describe('tenant schemas cost what the attributes cost', { timeout: 60_000 }, () => {
  let s: TestServer
  let viewer: Client
  let uniqueType: string
  let branchingType: string
  before(async () => {
    s = await startServer({ MAX_BODY_BYTES: String(2 * 1024 * 1024) })
    const tenant = newTenant('schema')
    const owner = s.as(tenant, ['owner'])
    viewer = s.as(tenant, ['viewer'])
    uniqueType = await publishedType(owner, { attributeSchema: { type: 'object', properties: { l: { type: 'array', uniqueItems: true } } } })
    branchingType = await publishedType(owner, {
      attributeSchema: {
        type: 'object',
        definitions: {
          node: { type: 'object', anyOf: [{ properties: { x: { $ref: '#/definitions/node' } }, required: ['a'] }, { properties: { x: { $ref: '#/definitions/node' } }, required: ['b'] }] }
        },
        properties: { r: { $ref: '#/definitions/node' } }
      }
    })
  })
  after(() => s.close())

  it('checks uniqueItems over 100,000 objects in linear time, and still finds a duplicate (key order aside)', async () => {
    const l = Array.from({ length: 100_000 }, (_, i) => ({ a: i, b: 'x' }))
    const { res, ms } = await timed(() => viewer.post(`/v1/object-types/${uniqueType}/validate`, { attributes: { l } }))
    assert.equal(res.status, 200, res.text.slice(0, 300))
    assert.equal(res.body.valid, true)
    assert.ok(ms < 3000, `took ${Math.round(ms)} ms`)
    const dup = await viewer.post(`/v1/object-types/${uniqueType}/validate`, { attributes: { l: [...l.slice(0, 1000), { b: 'x', a: 7 }] } })
    assert.equal(dup.body.valid, false)
    assert.deepEqual(dup.body.errors, [{ field: 'attributes.l', reason: 'must NOT have duplicate items (items ## 7 and 1000 are identical)' }])
  })

  it('stops a schema whose anyOf branches multiply over 40 levels of attributes with a fault, at once', async () => {
    let r: Record<string, unknown> = { a: 1 }
    for (let i = 0; i < 40; i++) r = { x: r }
    const { res, ms } = await timed(() => viewer.post(`/v1/object-types/${branchingType}/validate`, { attributes: { r } }))
    assert.equal(res.status, 200, res.text.slice(0, 300))
    assert.equal(res.body.valid, false)
    assert.equal(res.body.errors[0].field, 'attributes')
    assert.match(res.body.errors[0].reason, /too many steps/)
    assert.ok(ms < 2000, `took ${Math.round(ms)} ms`)
    // The same schema over shallow attributes is checked as before.
    const shallow = await viewer.post(`/v1/object-types/${branchingType}/validate`, { attributes: { r: { x: { a: 1 }, b: 1 } } })
    assert.equal(shallow.body.valid, true, shallow.text)
  })
})
