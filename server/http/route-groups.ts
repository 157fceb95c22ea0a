import Router from '@koa/router'
import type { Middleware } from 'koa'

// @koa/router matches a request by testing every route's regexp in turn: with some hundred
// routes that scan (and the captures it repeats) is a measurable share of a cheap request, a
// warm tile or a get by id. The routes are split, once they are all registered, into routers of
// their own by their first two path segments (static in every route of this service), so a
// request is tested only against the routes that can match it. Behaviour is the router's own:
// the same Layer objects in the same order; a path no group holds goes to the whole router.

const STATIC = /^[A-Za-z0-9._~-]*$/

/** The first two segments of a path, lowercased (the router matches case-insensitively), or null. */
function prefixOf (path: string, routeTemplate: boolean): string | null {
  let end = 0
  let segments = 0
  while (segments < 2) {
    const next = path.indexOf('/', end + 1)
    if (next === -1) { end = path.length; break }
    end = next
    segments++
  }
  const prefix = path.slice(0, end).toLowerCase()
  if (routeTemplate && !prefix.split('/').every(s => STATIC.test(s))) return null
  // '/metrics/' matches the route '/metrics' (non-strict trailing slash): one key for both.
  return prefix.endsWith('/') ? prefix.slice(0, -1) : prefix
}

/**
 * The router's dispatch middleware, grouped by path prefix; `router` itself when some route
 * template has a parameter or pattern in its first two segments. Call after every route is
 * registered (routes registered later are not seen). Use with `router.allowedMethods()`.
 */
export function groupedRoutes (router: Router): Middleware {
  const all = router.routes() as unknown as Middleware
  const groups = new Map<string, Router>()
  for (const layer of router.stack) {
    const key = typeof layer.path === 'string' ? prefixOf(layer.path, true) : null
    if (key === null || layer.methods.length === 0) return all
    let group = groups.get(key)
    if (group === undefined) groups.set(key, group = new Router(router.opts))
    group.stack.push(layer)
  }
  const dispatch = new Map([...groups].map(([key, g]) => [key, g.routes() as unknown as Middleware]))
  const grouped: Middleware = (ctx, next) => (dispatch.get(prefixOf(ctx.path, false) ?? '') ?? all)(ctx, next)
  // Like router.routes(): the middleware names its router (test/api/openapi lists routes by it).
  return Object.assign(grouped, { router })
}
