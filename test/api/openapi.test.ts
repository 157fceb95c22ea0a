import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { startServer, silentLog, type TestServer } from '../support/harness.js'
import { createApp } from '../../server/app.js'
import { buildOpenApi } from '../../server/openapi/document.js'
import type { RouteSpec } from '../../server/http/route.js'
import { wireModules } from '../../lib/modules.js'
import { CreateObjectBody } from '../../lib/objects/schema.js'

// The validator is CommonJS with `exports.default`; require() sidesteps the ESM interop question.
const { default: OpenAPISchemaValidator } = createRequire(import.meta.url)('openapi-schema-validator') as typeof import('openapi-schema-validator')

type Doc = { openapi: string, paths: Record<string, Record<string, { operationId: string, requestBody?: { content: Record<string, { schema: unknown }> } }>> }

const oasPath = (koaPath: string) => koaPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}')

describe('GET /openapi/v1.json', () => {
  let s: TestServer
  let doc: Doc
  let served: Array<{ method: string, path: string }>
  let declaredRoutes: RouteSpec[]
  before(async () => {
    s = await startServer()
    const res = await s.request('GET', '/openapi/v1.json')
    assert.equal(res.status, 200, res.text)
    doc = res.body
    // The very app the server runs, built the same way, to list the routes it serves.
    const app = createApp({ config: s.config, db: s.db, log: silentLog, sequencer: null, jobs: null, redis: null, hooks: wireModules() })
    declaredRoutes = app.routes.map(r => r.spec)
    served = declaredRoutes.map(r => ({ method: r.method, path: r.path }))
  })
  after(() => s.close())

  it('is public and JSON', async () => {
    const res = await s.request('GET', '/openapi/v1.json')
    assert.match(res.headers.get('content-type') ?? '', /application\/json/)
  })

  it('validates as OpenAPI 3.0 with zero errors', () => {
    assert.match(doc.openapi, /^3\.0\.\d+$/)
    const validator = new OpenAPISchemaValidator({ version: 3 })
    const { errors } = validator.validate(doc as unknown as Parameters<typeof validator.validate>[0])
    assert.deepEqual(errors, [])
  })

  it('lists every route the router serves, with its method', () => {
    assert.ok(served.length >= 5, 'the router serves routes')
    const missing = served.filter(r => doc.paths[oasPath(r.path)]?.[r.method] === undefined).map(r => `${r.method.toUpperCase()} ${r.path}`)
    assert.deepEqual(missing, [], 'served but not documented')
  })

  it('documents nothing the router does not serve', () => {
    const servedKeys = new Set(served.map(r => `${r.method} ${oasPath(r.path)}`))
    const extra: string[] = []
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const m of Object.keys(ops)) if (!servedKeys.has(`${m} ${p}`)) extra.push(`${m.toUpperCase()} ${p}`)
    }
    assert.deepEqual(extra, [], 'documented but not served')
  })

  it('holds every declared route, each with a unique operationId', () => {
    for (const r of declaredRoutes) {
      assert.equal(doc.paths[oasPath(r.path)]?.[r.method]?.operationId, r.operationId, `${r.method} ${r.path}`)
    }
    const ids = declaredRoutes.map(r => r.operationId)
    assert.deepEqual(ids.filter((id, i) => ids.indexOf(id) !== i), [], 'duplicate operationIds')
  })

  it('lists the platform paths docs/behaviour.md names', () => {
    for (const [p, m] of [['/metrics', 'get'], ['/openapi/v1.json', 'get'], ['/v1/health/live', 'get'], ['/v1/health/ready', 'get'], ['/v1/auth/me', 'get']]) {
      assert.ok(doc.paths[p]?.[m], `${m.toUpperCase()} ${p}`)
    }
  })

  it('uses the validators themselves as request body schemas', () => {
    const withBody = declaredRoutes.filter(r => r.body !== undefined)
    assert.ok(withBody.length > 0)
    for (const r of withBody) {
      const schema = doc.paths[oasPath(r.path)][r.method].requestBody?.content['application/json']?.schema
      assert.deepEqual(schema, JSON.parse(JSON.stringify(r.body)), `${r.method} ${r.path}`)
    }
    const create = doc.paths['/v1/objects'].post.requestBody?.content['application/json'].schema
    assert.deepEqual(create, JSON.parse(JSON.stringify(CreateObjectBody)))
  })

  it('is built from the very schema objects (same references, not copies)', () => {
    const built = buildOpenApi(declaredRoutes, 'test') as Doc
    const create = declaredRoutes.find(r => r.operationId === 'createObject')
    assert.equal(create?.body, CreateObjectBody)
    assert.equal(built.paths['/v1/objects'].post.requestBody?.content['application/json'].schema, CreateObjectBody)
  })

  it('documents a 401 on every bearer route and no 429 on unlimited ones', () => {
    const full = doc as unknown as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }
    for (const r of declaredRoutes) {
      const responses = full.paths[oasPath(r.path)][r.method].responses
      if (r.auth === 'bearer') assert.ok(responses['401'], `${r.method} ${r.path} 401`)
      if (r.unlimited === true) assert.equal(responses['429'], undefined, `${r.method} ${r.path} 429`)
      else assert.ok(responses['429'], `${r.method} ${r.path} 429`)
    }
  })
})
