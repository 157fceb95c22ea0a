import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import Koa from 'koa'
import Router from '@koa/router'
import { groupedRoutes } from '../../server/http/route-groups.js'

// server/http/route-groups: matching only the routes of the request's path prefix must answer
// exactly as the whole router does (status, Allow, which handler, params), for every kind of path.

function routes (extra: (r: Router) => void = () => {}): Router {
  const r = new Router()
  const answer = (name: string) => async (ctx: Koa.Context) => { ctx.body = { name, params: ctx.params, route: (ctx as unknown as { _matchedRoute?: string })._matchedRoute } }
  r.get('/v1/things', answer('list'))
  r.post('/v1/things', answer('create'))
  r.get('/v1/things/:id', answer('get'))
  r.patch('/v1/things/:id', answer('patch'))
  r.get('/v1/things/:id/parts/:part.json', answer('part'))
  r.get('/v1/other/:id', answer('other'))
  r.get('/metrics', answer('metrics'))
  r.get('/', answer('root'))
  extra(r)
  return r
}

async function serve (grouped: boolean, extra?: (r: Router) => void): Promise<{ server: Server, base: string }> {
  const app = new Koa()
  const router = routes(extra)
  app.use(async (ctx, next) => {
    await next()
    if (ctx.body == null && ctx.status !== 204) { const status = ctx.status; ctx.body = { status }; ctx.status = status }
  })
  app.use(grouped ? groupedRoutes(router) : router.routes())
  app.use(router.allowedMethods())
  const server = createServer(app.callback())
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

const CASES: Array<[string, string]> = [
  ['GET', '/v1/things'], ['POST', '/v1/things'], ['GET', '/v1/things/'], ['GET', '/V1/Things/abc'],
  ['GET', '/v1/things/a%20b'], ['PATCH', '/v1/things/x'], ['DELETE', '/v1/things/x'], ['PUT', '/v1/things'],
  ['GET', '/v1/things/x/parts/p1.json'], ['GET', '/v1/things/x/parts/p1.xml'], ['GET', '/v1/other/7'],
  ['OPTIONS', '/v1/things/x'], ['PROPFIND', '/v1/things/x'], ['PROPFIND', '/nowhere'], ['GET', '/nowhere/at/all'],
  ['GET', '/metrics'], ['GET', '/metrics/'], ['GET', '/'], ['GET', '/v1'], ['GET', '/v1/'], ['POST', '/metrics']
]

async function answers (base: string): Promise<string[]> {
  const out: string[] = []
  for (const [method, path] of CASES) {
    const r = await fetch(base + path, { method })
    out.push(`${method} ${path} -> ${r.status} allow=${r.headers.get('allow')} ${await r.text()}`)
  }
  return out
}

describe('groupedRoutes', () => {
  const servers: Server[] = []
  after(() => { for (const s of servers) s.close() })

  it('answers every request exactly as the whole router does', async () => {
    const whole = await serve(false)
    const grouped = await serve(true)
    servers.push(whole.server, grouped.server)
    const expected = await answers(whole.base)
    assert.deepEqual(await answers(grouped.base), expected)
    // The cases do reach handlers, 405, 501 and 404 (the comparison is not between two failures).
    assert.ok(expected.some(l => l.startsWith('GET /V1/Things/abc -> 200') && l.includes('"id":"abc"')), expected.join('\n'))
    assert.ok(expected.some(l => l.startsWith('DELETE /v1/things/x -> 405 allow=HEAD, GET, PATCH')), expected.join('\n'))
    assert.ok(expected.some(l => l.startsWith('PROPFIND /nowhere -> 501')))
    assert.ok(expected.some(l => l.startsWith('GET /nowhere/at/all -> 404')))
  })

  it('falls back to the whole router when a route has a parameter in its first two segments', async () => {
    const extra = (r: Router) => { r.get('/:tenant/dashboard', async ctx => { ctx.body = { tenant: ctx.params.tenant } }) }
    const grouped = await serve(true, extra)
    servers.push(grouped.server)
    const r = await fetch(`${grouped.base}/acme/dashboard`)
    assert.equal(r.status, 200)
    assert.deepEqual(await r.json(), { tenant: 'acme' })
  })
})
