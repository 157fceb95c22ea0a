import type { IncomingMessage, ServerResponse } from 'node:http'
import * as objects from '../../lib/objects/index.js'
import { httpFastPathTotal } from '../../lib/metrics.js'
import { errorAnswer } from '../middleware/errors.js'
import { admit, type HotReadDeps } from './hot-reads.js'
import { handOver, plainJson, plainLength, readBody } from './plain-body.js'

// A create (POST /v1/objects) ahead of Koa, as hot-reads.ts answers the hottest reads: Koa's
// per-request machinery and its body parser are a large share of a create's API CPU. The route's
// guards in the route's order (hot-reads.ts `admit`: token, one rate-limit point, the tenant
// policy's permissions, objects:write), then the body, then the route's own lib call
// (objects.createObject, through runWrite like every write), answered with the route's status,
// headers and body, counted and logged as the route's.
//
// What goes to Koa untouched (the route answers it): a request whose headers are not plain (a
// query string, another path spelling, a Content-Type other than application/json with at most
// charset=utf-8, a Content-Encoding, no Content-Length or one above MAX_BODY_BYTES), and a
// request admit() leaves to the route (a missing or bad token, the rate limit, a caller without
// objects:write). A body that is not plain JSON text (a BOM, not an object, a __proto__ or
// constructor key, \u escapes, bytes that are not UTF-8, bad JSON) goes to Koa with the bytes
// already read (middleware/body.ts BODY_READ): the route's own body parser reads them.
//
// Once the lib call has started, its errors are answered here with the route's error answer
// (middleware/errors.ts errorAnswer): a write is never run twice, so the route cannot be asked
// to answer it again.

const ROUTE = '/v1/objects'
const LABELS = { route: ROUTE }
const JSON_TYPE = 'application/json; charset=utf-8'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** Wraps a request handler (Koa's): a plain create is answered here, everything else goes on. */
export function withHotWrites (deps: HotReadDeps, next: Handler): Handler {
  return (req, res) => {
    const length = req.method === 'POST' && req.url === ROUTE && !deps.config.auth.disabled ? plainLength(req, deps.config.maxBodyBytes) : null
    if (length === null) { next(req, res); return }
    create(deps, req, res, length).then(done => { if (!done) next(req, res) }, () => { next(req, res) })
  }
}

/** True when answered; false leaves the request to Koa (with the body's bytes, once read). */
async function create (deps: HotReadDeps, req: IncomingMessage, res: ServerResponse, length: number): Promise<boolean> {
  const started = performance.now()
  const g = await admit(deps, req, 'objects', 'write')
  if (g === null) return false
  const bytes = await readBody(req)
  const body = plainJson(bytes, length)
  if (body === undefined) {
    handOver(req, bytes)
    return false
  }
  let status = 201
  let headers: Record<string, string | number>
  let text: string
  try {
    const o = await objects.createObject(g.service, body)
    text = JSON.stringify(o)
    headers = { ...g.headers, Location: `/v1/objects/${o.id}`, ETag: `"${o.version}"`, 'Content-Type': JSON_TYPE }
  } catch (err) {
    const a = errorAnswer(err, { ...g.state, maxBodyBytes: deps.config.maxBodyBytes })
    status = a.status
    text = a.body
    headers = { ...g.headers, 'Content-Type': JSON_TYPE }
  }
  res.writeHead(status, { ...headers, 'Content-Length': Buffer.byteLength(text) })
  res.end(text)
  deps.recorder.finish(g.state, 'POST', ROUTE, ROUTE, status, started)
  httpFastPathTotal.inc(LABELS)
  return true
}
