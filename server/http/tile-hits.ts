import type { IncomingMessage, ServerResponse } from 'node:http'
import * as license from '../../lib/license/index.js'
import * as layers from '../../lib/layers/index.js'
import { httpFastPathTotal } from '../../lib/metrics.js'
import { admit, type HotReadDeps } from './hot-reads.js'

// GET /v1/layers/tiles/{layer}/{z}/{x}/{y} ahead of Koa: a map view asks for tens of tiles at
// once, again and again, and nearly all are cache hits or 304s, which cost a few microseconds of
// lib work beside Koa's per-request machinery (context, middleware chain, router, response
// delegates), measured at more than half of a hit's CPU. This answers the plain case with the
// very checks of the route's guards and the very lib call of the route, in the same order
// (hot-reads.ts `admit`): token (lib/access, verified tokens cached until their expiry), rate
// limit (one point, the same key), permissions after the tenant policy, `objects:read`, the tiles feature of the
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
const TILE_LABELS = { route: TILE_ROUTE }

export interface TileHitDeps extends HotReadDeps {
  cache: layers.RenderCache
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
  let t: layers.TileCoordinates
  try { t = layers.parseTile(m[2], m[3], m[4]) } catch { return false }
  const g = await admit(deps, req, 'objects', 'read')
  if (g === null) return false
  let r: layers.Rendered
  try {
    if (deps.config.license.publicKey !== null) await license.assertFeature(g.service, 'tiles')
    const inm = req.headers['if-none-match']
    r = await layers.tile(g.service, deps.cache, m[1], t, {}, { ifNoneMatch: inm === '' ? undefined : inm, gzip: layers.acceptsGzip(req.headers['accept-encoding']) })
  } catch {
    return false
  }
  const headers: Record<string, string | number> = {
    ...g.headers,
    ETag: r.etag,
    'Cache-Control': `private, max-age=${r.maxAge}`,
    Vary: r.vary === true ? 'Authorization, Accept-Encoding' : 'Authorization'
  }
  const body = r.body
  const status = body === null ? 304 : 200
  if (body !== null) {
    headers['Content-Type'] = TILE_TYPE
    if (r.encoding !== undefined) headers['Content-Encoding'] = r.encoding
    headers['Content-Length'] = Buffer.isBuffer(body) ? body.length : body.reduce((n, p) => n + p.length, 0)
  }
  res.writeHead(status, headers)
  if (body === null || Buffer.isBuffer(body)) res.end(body ?? undefined)
  else {
    // A cold tile in the pieces it came from the database in: headers and pieces in one writev.
    res.cork()
    for (const p of body) res.write(p)
    res.end()
    res.uncork()
  }
  deps.recorder.finish(g.state, 'GET', TILE_ROUTE, req.url ?? '', status, started)
  httpFastPathTotal.inc(TILE_LABELS)
  return true
}
