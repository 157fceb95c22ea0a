import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { withEdge } from '../../server/http/edge.js'
import type { CompiledRoute } from '../../server/http/exchange.js'
import { requestRecorder } from '../../server/middleware/observe.js'
import { route, type RouteSpec } from '../../server/http/route.js'
import { createLogger } from '../../lib/log.js'
import { AppError } from '../../lib/errors.js'

// server/http/edge.ts: which requests the edge takes, and that it refuses an edge route that an
// earlier route would shadow in Koa's router.

const log = createLogger('test', 'error')
const spec = (operationId: string, method: RouteSpec['method'], path: string): RouteSpec =>
  ({ operationId, method, path, summary: '', description: '', tag: 't', auth: 'none', responses: { 200: { description: 'ok' } } })
const compiled = (s: RouteSpec, guards: CompiledRoute['guards'] = []): CompiledRoute =>
  ({ ...route(s, req => ({ body: { route: s.operationId, params: req.params } })), guards })

const EDGE = [
  compiled(spec('getLayerTile', 'get', '/v1/layers/tiles/:layer/:z/:x/:y')),
  compiled(spec('getObject', 'get', '/v1/objects/:id')),
  compiled(spec('listObjects', 'get', '/v1/objects')),
  compiled(spec('createObject', 'post', '/v1/objects')),
  compiled(spec('triggerAutomationWebhook', 'post', '/v1/automation/triggers/:slug'))
]

async function serve (routes: CompiledRoute[], fn: (call: (method: string, path: string) => Promise<string>) => Promise<void>): Promise<void> {
  const handler = withEdge(routes, { log, recorder: requestRecorder(log) }, (_req, res) => { res.end('koa') })
  const server = http.createServer(handler)
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    await fn(async (method, path) => (await fetch(base + path, { method })).text())
  } finally {
    server.close()
  }
}

describe('the edge (server/http/edge.ts)', () => {
  it('takes the listed routes in their plain form and leaves everything else to Koa', async () => {
    await serve(EDGE, async call => {
      assert.deepEqual(JSON.parse(await call('GET', '/v1/objects/abc?asOf=x')), { route: 'getObject', params: { id: 'abc' } })
      assert.deepEqual(JSON.parse(await call('GET', '/v1/layers/tiles/poles/1/0/0.mvt')), { route: 'getLayerTile', params: { layer: 'poles', z: '1', x: '0', y: '0.mvt' } })
      assert.deepEqual(JSON.parse(await call('GET', '/v1/objects/a%20b')), { route: 'getObject', params: { id: 'a b' } })
      assert.equal(JSON.parse(await call('POST', '/v1/objects')).route, 'createObject')
      for (const [method, path] of [['HEAD', '/v1/objects/abc'], ['GET', '/V1/objects/abc'], ['GET', '/v1/objects/'], ['GET', '/v1/objects/abc/history'],
        ['PATCH', '/v1/objects/abc'], ['GET', '/v1/objects/%E0%A4%A'], ['GET', '/v1/health/live']]) {
        assert.equal(method === 'HEAD' ? '' : await call(method, path), method === 'HEAD' ? '' : 'koa', `${method} ${path}`)
      }
    })
  })

  it('runs the route\'s guards first, on the edge as through Koa', async () => {
    const refused = EDGE.map(r => r.spec.operationId === 'getObject' ? compiled(r.spec, [() => { throw new AppError('FORBIDDEN', 'refused by its guard', {}) }]) : r)
    await serve(refused, async call => {
      assert.deepEqual(JSON.parse(await call('GET', '/v1/objects/abc')), { error: { code: 'FORBIDDEN', message: 'refused by its guard', details: {} } })
    })
  })

  it('refuses to start when an earlier route would take an edge route\'s requests in Koa\'s router', () => {
    const shadow = compiled(spec('objectByKey', 'get', '/v1/objects/:key'))
    assert.throws(() => withEdge([shadow, ...EDGE], { log, recorder: requestRecorder(log) }, () => {}), /getObject would take requests of objectByKey/)
    // A route of another method, or registered after, does not shadow it.
    withEdge([compiled(spec('patch', 'patch', '/v1/objects/:key')), ...EDGE, shadow], { log, recorder: requestRecorder(log) }, () => {})
  })

  it('names a listed route that is not declared', () => {
    assert.throws(() => withEdge(EDGE.slice(1), { log, recorder: requestRecorder(log) }, () => {}), /edge route getLayerTile is not declared/)
  })
})
