import { IncomingMessage, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { RateLimiterAbstract } from 'rate-limiter-flexible'
import * as automation from '../../lib/automation/index.js'
import { httpFastPathTotal } from '../../lib/metrics.js'
import { parse } from '../../lib/validation.js'
import { lazyChildLog, requestIdOf, type RequestRecorder } from '../middleware/observe.js'
import { LIMIT_DECIDED, decide, limitHeaders } from '../middleware/rate-limit.js'

// The automation ingress (POST /v1/automation/triggers/{slug}) ahead of Koa, as hot-reads.ts
// does for the hottest gets: a webhook call is a short lib call (one read, one insert) beside
// Koa's per-request machinery and its body parser, so Koa was most of the API's CPU per call.
// The plain, successful call is answered here with the route's guards in the route's order (one
// rate-limit point on the client address, the JSON body, then the route's handler); anything else
// goes to Koa, where the route answers it: a body that is not plain JSON as koa-body reads it
// (no Content-Length, chunked, compressed, another media type or charset, over the limit), the
// limit reached, a body the route refuses, a bad token (401), automation switched off (403), an
// unknown slug (404) or any error. A body already read travels to Koa as a replayed request, so
// koa-body parses the very bytes the client sent; a rate-limit decision travels as LIMIT_DECIDED.

export interface HotIngressDeps {
  config: automation.IngressDeps['config']
  ingress: automation.IngressDeps
  limiter: RateLimiterAbstract
  recorder: RequestRecorder
}

const ROUTE = '/v1/automation/triggers/:slug'
const LABELS = { route: ROUTE }
// The slugs a rule can have (lib/automation SLUG_PATTERN): no escapes, so the path's text is the
// slug Koa's router would decode.
const PATH = /^\/v1\/automation\/triggers\/([a-z0-9][a-z0-9_-]{0,62})$/
const PLAIN_JSON = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i
// co-body's strict mode (koa-body jsonStrict): only an object or an array at the top.
const STRICT_JSON = /^[\x20\x09\x0a\x0d]*(\[|\{)/

const SAFE_IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/

/** The route's handler: the body checked, the token and Idempotency-Key read, the run queued. */
export async function acceptIngress (deps: automation.IngressDeps, slug: string, headers: IncomingHttpHeaders, body: unknown): Promise<{ accepted: true, runIds: string[] }> {
  const payload = parse<object>(automation.schema.IngressBody, body)
  const m = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')
  const key = headers['idempotency-key']
  return automation.acceptWebhook(deps, slug, m ? m[1] : null, payload, typeof key === 'string' && SAFE_IDEMPOTENCY_KEY.test(key) ? key : null)
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** Wraps a request handler (Koa's): the ingress is tried here first, everything else goes on. */
export function withHotIngress (deps: HotIngressDeps, next: Handler): Handler {
  return (req, res) => {
    if (req.method !== 'POST') { next(req, res); return }
    const url = req.url ?? ''
    const m = PATH.exec(url)
    const length = Number(req.headers['content-length'])
    if (m === null || !plainBody(req, length, deps.config.maxBodyBytes)) { next(req, res); return }
    serve(deps, req, res, m[1], length).then(
      handOver => { if (handOver !== null) next(handOver, res) },
      () => { res.destroy() })
  }
}

/** A body koa-body reads as the bytes sent: a length within the limit, plain JSON in UTF-8, not compressed. */
function plainBody (req: IncomingMessage, length: number, max: number): boolean {
  const h = req.headers
  return Number.isInteger(length) && length > 0 && length <= max && h['transfer-encoding'] === undefined &&
    h['content-encoding'] === undefined && PLAIN_JSON.test(h['content-type'] ?? '')
}

/** Null when answered; otherwise the request to hand to Koa (the body replayed once it was read). */
async function serve (deps: HotIngressDeps, req: IncomingMessage, res: ServerResponse, slug: string, length: number): Promise<IncomingMessage | null> {
  const started = performance.now()
  const limit = await decide(deps.limiter, `ip:${req.socket.remoteAddress ?? ''}`)
  ;(req as { [LIMIT_DECIDED]?: unknown })[LIMIT_DECIDED] = limit
  if (!limit.ok) return req
  const bytes = await readBody(req)
  let body: string
  try {
    const text = bytes.toString('utf8')
    if (bytes.length !== length || !STRICT_JSON.test(text) || text.includes('__proto__')) return replay(req, bytes)
    body = JSON.stringify(await acceptIngress(deps.ingress, slug, req.headers, JSON.parse(text)))
  } catch {
    return replay(req, bytes)
  }
  const requestId = requestIdOf(req.headers['x-request-id'])
  const state: Record<string, unknown> = { requestId }
  lazyChildLog(state, deps.ingress.log, requestId)
  res.writeHead(202, {
    'X-Request-Id': requestId,
    ...limitHeaders(deps.config.rateLimit.limit, limit.res),
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body)
  })
  res.end(body)
  deps.recorder.finish(state, 'POST', ROUTE, req.url!, 202, started)
  httpFastPathTotal.inc(LABELS)
  return null
}

/** The body's bytes as far as they came (a client that stops early gets Koa's answer to that). */
async function readBody (req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = []
  try {
    for await (const part of req) parts.push(part as Buffer)
  } catch {}
  return Buffer.concat(parts)
}

/** A request Koa reads like the original: same socket, head and body bytes. */
function replay (req: IncomingMessage, bytes: Buffer): IncomingMessage {
  const copy = new IncomingMessage(req.socket)
  Object.assign(copy, {
    method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders,
    httpVersion: req.httpVersion, httpVersionMajor: req.httpVersionMajor, httpVersionMinor: req.httpVersionMinor,
    trailers: req.trailers, rawTrailers: req.rawTrailers, complete: true,
    [LIMIT_DECIDED]: (req as { [LIMIT_DECIDED]?: unknown })[LIMIT_DECIDED]
  })
  copy.push(bytes)
  copy.push(null)
  return copy
}
