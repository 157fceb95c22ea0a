import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { startServer, type TestServer } from '../support/harness.js'

// The whole served document through Redocly's linter (the engine of Redocly CLI): its
// recommended-strict ruleset (every recommended rule is an error) plus operation descriptions and
// sorted tags. Any route added anywhere is checked: nothing here names a route except the
// exceptions below, each with its reason.
const RULES = {
  // The product declares no license for its contract (package.json is private, unlicensed).
  'info-license': 'off',
  'operation-description': 'error',
  'tags-alphabetical': 'error'
} as const

const ACCEPTED: Array<{ ruleId: string, pointer: string, why: string }> = [
  { ruleId: 'operation-4xx-response', pointer: '#/paths/~1v1~1health~1live/get/responses', why: 'public, not rate-limited, takes no input: it cannot answer 4xx' },
  { ruleId: 'operation-4xx-response', pointer: '#/paths/~1v1~1health~1ready/get/responses', why: 'public, not rate-limited, takes no input: it cannot answer 4xx' }
]

describe('GET /openapi/v1.json through the Redocly linter', () => {
  let s: TestServer
  let source: string
  before(async () => {
    s = await startServer()
    const res = await s.request('GET', '/openapi/v1.json')
    assert.equal(res.status, 200)
    source = res.text
  })
  after(() => s.close())

  it('has zero problems (recommended-strict, operation descriptions, sorted tags)', async () => {
    const config = await createConfig({ extends: ['recommended-strict'], rules: RULES })
    const problems = await lintFromString({ source, absoluteRef: 'openapi-v1.json', config })
    const found = problems.map(p => ({ ruleId: p.ruleId, pointer: p.location[0]?.pointer ?? '', message: p.message }))
    const unexpected = found.filter(p => !ACCEPTED.some(a => a.ruleId === p.ruleId && a.pointer === p.pointer))
    assert.deepEqual(unexpected, [])
  })

  it('still raises the accepted exceptions (so the list stays true)', async () => {
    const config = await createConfig({ extends: ['recommended-strict'], rules: RULES })
    const problems = await lintFromString({ source, absoluteRef: 'openapi-v1.json', config })
    for (const a of ACCEPTED) assert.ok(problems.some(p => p.ruleId === a.ruleId && p.location[0]?.pointer === a.pointer), `${a.ruleId} ${a.pointer}`)
  })
})
