import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { newTenant, startServer, type TestServer } from '../support/harness.js'
import { gql } from '../support/graphql.js'

// graphql's validation rules grow faster than the document (5,000 aliases held the process 2 s):
// GRAPHQL_MAX_TOKENS refuses such a document at parse, before any of them runs, and
// GRAPHQL_MAX_FIELDS / GRAPHQL_MAX_ROOT_FIELDS any document of more fields, or any operation of
// more root fields (each run at once, with statements of its own), before execution.

const aliases = (n: number): string => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} }`

describe('GraphQL documents are bounded in size before validation and in fields before execution', { timeout: 60_000 }, () => {
  let bounded: TestServer
  let unbounded: TestServer
  const tenant = newTenant('gqlf')
  before(async () => {
    bounded = await startServer()
    unbounded = await startServer({ GRAPHQL_MAX_TOKENS: '1000000', GRAPHQL_MAX_FIELDS: '100000', GRAPHQL_MAX_ROOT_FIELDS: '100000' })
  })
  after(async () => { await bounded?.close(); await unbounded?.close() })

  it('refuses 5,000 aliases (15,000 tokens) at parse with 400 BAD_REQUEST, faster than running them takes', async () => {
    const query = aliases(5000)
    const viewer = bounded.as(tenant, ['viewer'])
    // Both servers warm (Apollo started, the schema's first validation done).
    await gql(viewer, '{ __typename }')
    await gql(unbounded.as(tenant, ['viewer']), '{ __typename }')

    let t0 = performance.now()
    const ran = await gql(unbounded.as(tenant, ['viewer']), query)
    const ranMs = performance.now() - t0
    assert.equal(ran.status, 200, ran.res.text.slice(0, 300))
    assert.equal(Object.keys(ran.data).length, 5000)

    t0 = performance.now()
    const r = await gql(viewer, query)
    const refusedMs = performance.now() - t0
    assert.equal(r.status, 400, r.res.text.slice(0, 300))
    assert.equal(r.errors?.[0].extensions.code, 'BAD_REQUEST')
    assert.match(r.errors?.[0].message ?? '', /Document contains more tha[nt] 10000 tokens/)
    assert.ok(refusedMs * 2 < ranMs, `refused in ${Math.round(refusedMs)} ms, ran in ${Math.round(ranMs)} ms`)
  })

  it('refuses 1,001 fields (within the tokens) with 400 BAD_REQUEST naming the fields limit, running none', async () => {
    const r = await gql(bounded.as(tenant, ['viewer']), aliases(1001))
    assert.equal(r.status, 400, r.res.text.slice(0, 300))
    assert.equal(r.data, undefined)
    assert.equal(r.errors?.[0].extensions.code, 'BAD_REQUEST')
    assert.deepEqual(r.errors?.[0].extensions.details, { limit: 'fields', maximum: 1000 })
  })

  it('runs a document of exactly 1,000 fields', async () => {
    const query = `{ objectTypes(limit: 1) { items { ${Array.from({ length: 997 }, (_, i) => `a${i}: id`).join(' ')} } } }`
    const r = await gql(bounded.as(tenant, ['viewer']), query)
    assert.equal(r.status, 200, r.res.text.slice(0, 300))
    assert.equal(r.errors, undefined, r.res.text.slice(0, 300))
  })

  it('refuses an operation of 21 root fields (each would run at once), runs one of 20', async () => {
    const roots = (n: number): string => `{ ${Array.from({ length: n }, (_, i) => `a${i}: objects(limit: 1, offset: ${i}) { id }`).join(' ')} }`
    const r = await gql(bounded.as(tenant, ['viewer']), roots(21))
    assert.equal(r.status, 400, r.res.text.slice(0, 300))
    assert.deepEqual(r.errors?.[0].extensions.details, { limit: 'rootFields', maximum: 20 })
    const ok = await gql(bounded.as(tenant, ['viewer']), roots(20))
    assert.equal(ok.status, 200, ok.res.text.slice(0, 300))
    assert.equal(Object.keys(ok.data).length, 20)
  })
})
