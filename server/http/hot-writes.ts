import type { IncomingMessage, ServerResponse } from 'node:http'
import * as objects from '../../lib/objects/index.js'
import { httpFastPathTotal } from '../../lib/metrics.js'
import { BODY_READ } from '../middleware/body.js'
import { errorAnswer } from '../middleware/errors.js'
import { admit, type HotReadDeps } from './hot-reads.js'

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
const PLAIN_TYPE = /^application\/json(?:\s*;\s*charset="?utf-8"?)?$/i
// co-body's strict mode (what the route's parser runs): the text must open an object or array.
const OPENS_OBJECT = /^[\x20\x09\x0a\x0d]*\{/
// What the route's parser (@hapi/bourne, protoAction 'error') looks at beyond JSON.parse.
const NOT_PLAIN_TEXT = /__proto__|constructor|\\u|\uFFFD/

type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** Wraps a request handler (Koa's): a plain create is answered here, everything else goes on. */
export function withHotWrites (deps: HotReadDeps, next: Handler): Handler {
  return (req, res) => {
    const length = req.method === 'POST' && req.url === ROUTE && !deps.config.auth.disabled ? plainLength(req, deps.config.maxBodyBytes) : null
    if (length === null) { next(req, res); return }
    create(deps, req, res, length).then(done => { if (!done) next(req, res) }, () => { next(req, res) })
  }
}

/** The body's length when the request's headers are plain, else null. */
function plainLength (req: IncomingMessage, max: number): number | null {
  const h = req.headers
  if (h['content-encoding'] !== undefined || h['transfer-encoding'] !== undefined || !PLAIN_TYPE.test(h['content-type'] ?? '')) return null
  const length = Number(h['content-length'])
  return Number.isInteger(length) && length > 0 && length <= max && /^\d+$/.test(h['content-length'] ?? '') ? length : null
}

/** True when answered; false leaves the request to Koa (with the body's bytes, once read). */
async function create (deps: HotReadDeps, req: IncomingMessage, res: ServerResponse, length: number): Promise<boolean> {
  const started = performance.now()
  const g = await admit(deps, req, 'objects', 'write')
  if (g === null) return false
  const bytes = await readBody(req)
  const body = bytes.length === length ? plainJson(bytes) : undefined
  if (body === undefined) {
    (req as { [BODY_READ]?: Buffer })[BODY_READ] = bytes
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

/** The body's bytes as received (fewer than announced when the client went away). */
function readBody (req: IncomingMessage): Promise<Buffer> {
  return new Promise(resolve => {
    const chunks: Buffer[] = []
    const done = () => { resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)) }
    req.on('data', (c: Buffer) => chunks.push(c))
    req.once('end', done)
    req.once('error', done)
    req.once('aborted', done)
  })
}

/** The parsed body when its text is plain JSON of an object (the route's parser gives the same), else undefined. */
function plainJson (bytes: Buffer): unknown {
  if (bytes[0] === 0xef) return undefined // a BOM, which the route's decoder drops
  const text = bytes.toString('utf8')
  if (!OPENS_OBJECT.test(text) || NOT_PLAIN_TEXT.test(text)) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
