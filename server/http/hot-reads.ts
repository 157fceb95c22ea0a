import type { IncomingMessage, ServerResponse } from 'node:http'
import { parse as parseQueryString } from 'node:querystring'
import type { RateLimiterAbstract } from 'rate-limiter-flexible'
import type { Config } from '../../lib/config.js'
import type { Logger } from '../../lib/log.js'
import type { ServiceContext } from '../../lib/context.js'
import * as access from '../../lib/access/index.js'
import * as policy from '../../lib/policy/index.js'
import * as objects from '../../lib/objects/index.js'
import { parseQuery } from '../../lib/validation.js'
import { httpFastPathTotal } from '../../lib/metrics.js'
import { bearerToken, serviceContext, type AuthDeps } from '../middleware/auth.js'
import { lazyChildLog, requestIdOf, type RequestRecorder } from '../middleware/observe.js'
import { LIMIT_DECIDED, decide, identityKey, limitHeaders } from '../middleware/rate-limit.js'

// The hottest plain reads ahead of Koa: a get by id and a page of objects cost the API a few
// tens of microseconds of lib work beside Koa's per-request machinery (context, middleware
// chain, router, response delegates), which is a large share of their CPU. A hot read answers the
// plain, successful case with the very checks of the route's guards in the route's order: token
// (lib/access, verified tokens cached until their expiry), one rate-limit point on the same key,
// permissions after the tenant policy, the read's permission, then the route's own lib call. The
// answer carries the headers the route sets and is counted and logged as the route's. Anything
// else goes to Koa untouched, where the route answers it: a path that is not plain, a missing or
// bad token (401 and its audit event), a denial (403 and its audit event), a bad query (400), a
// missing object (404) or any error. A rate-limit decision already taken travels with the
// request (LIMIT_DECIDED), so it is not counted twice. server/http/tile-hits.ts does the same for
// tiles.

export interface HotReadDeps {
  config: Readonly<Config>
  auth: AuthDeps
  log: Logger
  limiter: RateLimiterAbstract
  recorder: RequestRecorder
}

/** A successful answer of a hot read (anything else is thrown, and Koa answers it). */
interface Answer { headers: Record<string, string | number>, body: string }

interface HotRead {
  /** The route template, as the route's metrics and logs name it. */
  route: string
  /** The metric labels of the route, made once. */
  labels: { route: string }
  /** The path this read serves (its captures are passed to `answer`). */
  path: RegExp
  answer: (service: ServiceContext, m: RegExpExecArray, query: Record<string, unknown>) => Promise<Answer>
}

const JSON_TYPE = 'application/json; charset=utf-8'
const S = objects.schema

const read = (route: string, path: RegExp, answer: HotRead['answer']): HotRead => ({ route, labels: { route }, path, answer })

const READS: HotRead[] = [
  read('/v1/objects/:id', /^\/v1\/objects\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/, async (service, m, query) => {
    const o = await objects.getObjectJson(service, m[1], parseQuery<objects.TimePoint>(S.GetObjectQuery, query))
    return { headers: { ETag: `"${o.version}"`, 'Content-Type': JSON_TYPE }, body: o.json }
  }),
  read('/v1/objects', /^\/v1\/objects$/, async (service, _m, query) => {
    const body = await objects.listObjectsJson(service, parseQuery<objects.ListQuery>(S.ListObjectsQuery, query))
    return { headers: { 'Content-Type': JSON_TYPE }, body }
  })
]

type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** Wraps a request handler (Koa's): the hot reads are tried here first, everything else goes on. */
export function withHotReads (deps: HotReadDeps, next: Handler): Handler {
  return (req, res) => {
    if (req.method !== 'GET' || deps.config.auth.disabled) { next(req, res); return }
    const url = req.url ?? ''
    const q = url.indexOf('?')
    const path = q === -1 ? url : url.slice(0, q)
    for (const hot of READS) {
      const m = hot.path.exec(path)
      if (m === null) continue
      serve(deps, hot, req, res, m, path, q === -1 ? '' : url.slice(q + 1)).then(done => { if (!done) next(req, res) }, () => { next(req, res) })
      return
    }
    next(req, res)
  }
}

/** True when answered; false leaves the request to Koa (nothing written). */
async function serve (deps: HotReadDeps, hot: HotRead, req: IncomingMessage, res: ServerResponse, m: RegExpExecArray, path: string, queryString: string): Promise<boolean> {
  const started = performance.now()
  const g = await admit(deps, req, 'objects', 'read')
  if (g === null) return false
  let a: Answer
  try {
    // Koa's ctx.query is node:querystring's parse of the same text.
    a = await hot.answer(g.service, m, queryString === '' ? {} : parseQueryString(queryString))
  } catch {
    return false
  }
  res.writeHead(200, { ...g.headers, ...a.headers, 'Content-Length': Buffer.byteLength(a.body) })
  res.end(a.body)
  deps.recorder.finish(g.state, 'GET', hot.route, path, 200, started)
  httpFastPathTotal.inc(hot.labels)
  return true
}

/** What a fast path's request was admitted with: its lib context, request state and the headers every answer carries. */
export interface Admitted {
  service: ServiceContext
  state: Record<string, unknown>
  /** X-Request-Id and the rate-limit headers. */
  headers: Record<string, string | number>
}

/**
 * The route guards of a bearer-token read, in the route's order, for a fast path: the token
 * (verified tokens cached until their expiry), one rate-limit point on the identity's key (the
 * decision travels with the request as LIMIT_DECIDED, so a hand-over does not count it twice),
 * the permissions after the tenant policy, then `resource:action`. Null when the route must
 * answer (a missing or bad token, the limit reached, a denial: each with its status and audit).
 */
export async function admit (deps: HotReadDeps, req: IncomingMessage, resource: access.Resource, action: access.Action): Promise<Admitted | null> {
  const check = access.verifyAccessToken(deps.config.auth, bearerToken(req.headers.authorization))
  if (!check.ok) return null
  const id = check.identity
  const limit = await decide(deps.limiter, identityKey(id))
  ;(req as { [LIMIT_DECIDED]?: unknown })[LIMIT_DECIDED] = limit
  if (!limit.ok) return null
  const permissions = await policy.permissionsFor(deps.auth.db, id.tenant, id.roles, id.scope)
  if (!access.can(permissions, resource, action)) return null
  const requestId = requestIdOf(req.headers['x-request-id'])
  const state: Record<string, unknown> = { identity: id }
  lazyChildLog(state, deps.log, requestId)
  return {
    service: serviceContext(deps.auth, id, state, permissions),
    state,
    headers: { 'X-Request-Id': requestId, ...limitHeaders(deps.config.rateLimit.limit, limit.res) }
  }
}
