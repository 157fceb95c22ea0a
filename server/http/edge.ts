import type { IncomingMessage, ServerResponse } from 'node:http'
import { exchange, type CompiledRoute, type ExchangeDeps } from './exchange.js'
import { splitUrl } from './route.js'

/**
 * The routes answered ahead of Koa, by operationId: the requests a service gets most of (a map
 * view asks for tens of tiles at once; integrators read, list and create objects; webhooks come
 * in bursts), for which Koa's own per-request work (its context, the middleware chain, the
 * router's scan) costs as much as the route's. They run the very same compiled route as through
 * Koa (server/http/exchange.ts: same guards in the same order, same handler, same writer); only
 * the dispatch differs. Every other route, and any request to these whose path is not in its
 * plain form (another case, a trailing slash, a bad escape) or whose method is not the route's
 * own (HEAD), goes to Koa.
 */
export const EDGE_ROUTES = ['getLayerTile', 'getObject', 'listObjects', 'createObject', 'triggerAutomationWebhook']

type Handler = (req: IncomingMessage, res: ServerResponse) => void

interface EdgeRoute { route: CompiledRoute, method: string, pattern: RegExp, names: string[] }

const SEGMENT = /^:([A-Za-z0-9_]+)$/

/** A template's segments: a literal, or a parameter (`:name`); anything else cannot be on the edge. */
function segmentsOf (path: string): Array<{ literal: string } | { param: string }> {
  return path.split('/').slice(1).map(s => {
    const m = SEGMENT.exec(s)
    if (m !== null) return { param: m[1] }
    if (s.includes(':')) throw new Error(`edge route ${path}: only whole-segment parameters are supported`)
    return { literal: s }
  })
}

/** Whether some path matches both templates (Koa's router: parameters match any one segment, literals case-insensitively). */
function overlap (a: string, b: string): boolean {
  const x = a.split('/')
  const y = b.split('/')
  return x.length === y.length && x.every((s, i) => s.includes(':') || y[i].includes(':') || s.toLowerCase() === y[i].toLowerCase())
}

/**
 * Koa's handler, with EDGE_ROUTES answered first. Refuses to start when an edge route could take
 * a request that Koa's router gives to a route registered before it.
 */
export function withEdge (routes: CompiledRoute[], deps: ExchangeDeps, koa: Handler): Handler {
  const edge: EdgeRoute[] = []
  for (const id of EDGE_ROUTES) {
    const i = routes.findIndex(r => r.spec.operationId === id)
    if (i === -1) throw new Error(`edge route ${id} is not declared`)
    const { spec } = routes[i]
    const shadow = routes.slice(0, i).find(r => r.spec.method === spec.method && overlap(r.spec.path, spec.path))
    if (shadow !== undefined) throw new Error(`edge route ${id} would take requests of ${shadow.spec.operationId}, declared before it`)
    const segments = segmentsOf(spec.path)
    const names = segments.flatMap(s => 'param' in s ? [s.param] : [])
    const pattern = new RegExp(`^${segments.map(s => '/' + ('param' in s ? '([^/]+)' : s.literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('')}$`)
    edge.push({ route: routes[i], method: spec.method.toUpperCase(), pattern, names })
  }
  return (req, res) => {
    const { path, search } = splitUrl(req.url ?? '/')
    for (const e of edge) {
      if (req.method !== e.method) continue
      const m = e.pattern.exec(path)
      if (m === null) continue
      const params = paramsOf(e.names, m)
      if (params === null) break
      exchange(deps, e.route, req, res, path, search, params).catch(() => { res.destroy() })
      return
    }
    koa(req, res)
  }
}

/** The captures as Koa's router decodes them; null for a bad escape (Koa's router answers it). */
function paramsOf (names: string[], m: RegExpExecArray): Record<string, string> | null {
  const params: Record<string, string> = {}
  for (let i = 0; i < names.length; i++) {
    const raw = m[i + 1]
    if (raw.includes('%')) {
      try { params[names[i]] = decodeURIComponent(raw) } catch { return null }
    } else params[names[i]] = raw
  }
  return params
}
