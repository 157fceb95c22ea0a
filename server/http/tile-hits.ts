import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RateLimiterAbstract } from 'rate-limiter-flexible'
import type { Config } from '../../lib/config.js'
import type { Logger } from '../../lib/log.js'
import * as access from '../../lib/access/index.js'
import * as policy from '../../lib/policy/index.js'
import * as license from '../../lib/license/index.js'
import * as layers from '../../lib/layers/index.js'
import { bearerToken, serviceContext, type AuthDeps } from '../middleware/auth.js'
import { lazyChildLog, requestIdOf, type RequestRecorder } from '../middleware/observe.js'
import { LIMIT_DECIDED, decide, identityKey, limitHeaders } from '../middleware/rate-limit.js'

// GET /v1/layers/tiles/{layer}/{z}/{x}/{y} ahead of Koa: a map view asks for tens of tiles at
// once, again and again, and nearly all are cache hits or 304s, which cost a few microseconds of
// lib work beside Koa's per-request machinery (context, middleware chain, router, response
// delegates), measured at more than half of a hit's CPU. This answers the plain case with the
// very checks of the route's guards and the very lib call of the route, in the same order:
// token (lib/access, verified tokens cached until their expiry), rate limit (one point, the
// same key), permissions after the tenant policy, `objects:read`, the tiles feature of the
// license, then layers.tile (layer at its current version, change counter, cache key of the
// tenant, the coding Accept-Encoding allows, If-None-Match). The answer carries the headers
// the route sets (Content-Encoding and Vary included), and is counted and logged as the
// route's. Anything else goes to Koa untouched, where the route answers it: a query string, a
// path that is not plain, a missing or bad token (401 and its audit event), a denial (403 and
// its audit event), an unknown layer, a bad z/x/y or any error; a rate limit decision already
// taken travels with the request (LIMIT_DECIDED), so it is not counted twice.

export const TILE_ROUTE = '/v1/layers/tiles/:layer/:z/:x/:y'
const TILE_PATH = /^\/v1\/layers\/tiles\/([a-z0-9][a-z0-9_-]{0,62})\/(\d{1,2})\/(\d{1,9})\/(\d{1,9}(?:\.mvt|\.pbf)?)$/
const TILE_TYPE = 'application/vnd.mapbox-vector-tile'

export interface TileHitDeps {
  config: Readonly<Config>
  auth: AuthDeps
  log: Logger
  limiter: RateLimiterAbstract
  cache: layers.RenderCache
  recorder: RequestRecorder
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** Wraps Koa's request handler: tile requests are tried here first, everything else goes to Koa. */
export function withTileHits (deps: TileHitDeps, koa: Handler): Handler {
  return (req, res) => {
    const m = req.method === 'GET' ? TILE_PATH.exec(req.url ?? '') : null
    if (m === null || deps.config.auth.disabled) { koa(req, res); return }
    serve(deps, req, res, m).then(done => { if (!done) koa(req, res) }, () => { koa(req, res) })
  }
}

/** True when answered; false leaves the request to Koa (nothing written). */
async function serve (deps: TileHitDeps, req: IncomingMessage, res: ServerResponse, m: RegExpExecArray): Promise<boolean> {
  const started = performance.now()
  const check = access.verifyAccessToken(deps.config.auth, bearerToken(req.headers.authorization))
  if (!check.ok) return false
  let t: layers.TileCoordinates
  try { t = layers.parseTile(m[2], m[3], m[4]) } catch { return false }
  const id = check.identity
  const limit = await decide(deps.limiter, identityKey(id))
  ;(req as { [LIMIT_DECIDED]?: unknown })[LIMIT_DECIDED] = limit
  if (!limit.ok) return false
  const permissions = await policy.permissionsFor(deps.auth.db, id.tenant, id.roles, id.scope)
  if (!access.can(permissions, 'objects', 'read')) return false
  const state: Record<string, unknown> = { requestId: requestIdOf(req.headers['x-request-id']), identity: id }
  lazyChildLog(state, deps.log, state.requestId as string)
  const service = serviceContext(deps.auth, id, state, permissions)
  let r: layers.Rendered
  try {
    if (deps.config.license.publicKey !== null) await license.assertFeature(service, 'tiles')
    const inm = req.headers['if-none-match']
    r = await layers.tile(service, deps.cache, m[1], t, {}, inm === undefined || inm === '' ? undefined : inm, layers.acceptsGzip(req.headers['accept-encoding']))
  } catch {
    return false
  }
  const headers: Record<string, string | number> = {
    'X-Request-Id': state.requestId as string,
    ...limitHeaders(deps.config.rateLimit.limit, limit.res),
    ETag: r.etag,
    'Cache-Control': `private, max-age=${r.maxAge}`,
    Vary: r.vary === true ? 'Authorization, Accept-Encoding' : 'Authorization'
  }
  const status = r.body === null ? 304 : 200
  if (r.body !== null) {
    headers['Content-Type'] = TILE_TYPE
    if (r.encoding !== undefined) headers['Content-Encoding'] = r.encoding
    headers['Content-Length'] = r.body.length
  }
  res.writeHead(status, headers)
  res.end(r.body ?? undefined)
  deps.recorder.finish(state, 'GET', TILE_ROUTE, req.url ?? '', status, started)
  return true
}
