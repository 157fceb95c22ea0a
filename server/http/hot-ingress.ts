import type { IncomingMessage, IncomingHttpHeaders, ServerResponse } from 'node:http'
import type { RateLimiterAbstract } from 'rate-limiter-flexible'
import * as automation from '../../lib/automation/index.js'
import { AppError } from '../../lib/errors.js'
import { httpFastPathTotal } from '../../lib/metrics.js'
import { parse } from '../../lib/validation.js'
import { lazyChildLog, requestIdOf, type RequestRecorder } from '../middleware/observe.js'
import { LIMIT_DECIDED, decide, limitHeaders } from '../middleware/rate-limit.js'
import { errorAnswer } from '../middleware/errors.js'
import { handOver, plainJson, plainLength, readBody } from './plain-body.js'

// The automation ingress (POST /v1/automation/triggers/{slug}) ahead of Koa, as hot-reads.ts
// does for the hottest gets: a webhook call is a short lib call (one read, one insert) beside
// Koa's per-request machinery and its body parser, so Koa was most of the API's CPU per call.
// The plain, successful call is answered here with the route's guards in the route's order (one
// rate-limit point on the client address, the JSON body, then the route's handler); anything else
// goes to Koa, where the route answers it: a body that is not plain JSON as koa-body reads it
// (no Content-Length, chunked, compressed, another media type or charset, over the limit), the
// limit reached, a body the route refuses, a bad token (401), automation switched off (403), an
// unknown slug (404). A body already read travels to Koa with the request (plain-body.ts
// `handOver`), so koa-body parses the very bytes the client sent; a rate-limit decision travels
// as LIMIT_DECIDED. Every refusal comes before the run is written; a failure of the write itself
// (or of a read, which the route would answer the same way) is answered here with the route's
// error answer, never by running the call again through Koa.

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
// What the route answers itself, all before anything is written: a body the schema refuses, a bad
// token, automation switched off for the tenant, no live rule for the slug.
const REFUSALS = new Set(['VALIDATION_ERROR', 'BAD_REQUEST', 'UNAUTHORIZED', 'FEATURE_DISABLED', 'NOT_FOUND'])

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
    const m = req.method === 'POST' ? PATH.exec(req.url ?? '') : null
    const length = m === null ? null : plainLength(req, deps.config.maxBodyBytes)
    if (m === null || length === null) { next(req, res); return }
    serve(deps, req, res, m[1], length).then(done => { if (!done) next(req, res) }, () => { res.destroy() })
  }
}

/** True when answered; false leaves the request to Koa (with the body's bytes, once read). */
async function serve (deps: HotIngressDeps, req: IncomingMessage, res: ServerResponse, slug: string, length: number): Promise<boolean> {
  const started = performance.now()
  const limit = await decide(deps.limiter, `ip:${req.socket.remoteAddress ?? ''}`)
  ;(req as { [LIMIT_DECIDED]?: unknown })[LIMIT_DECIDED] = limit
  if (!limit.ok) return false
  const bytes = await readBody(req)
  const payload = plainJson(bytes, length)
  if (payload === undefined) { handOver(req, bytes); return false }
  const requestId = requestIdOf(req.headers['x-request-id'])
  const state: Record<string, unknown> = {}
  lazyChildLog(state, deps.ingress.log, requestId)
  let status = 202
  let body: string
  try {
    body = JSON.stringify(await acceptIngress(deps.ingress, slug, req.headers, payload))
  } catch (err) {
    if (err instanceof AppError && REFUSALS.has(err.code)) { handOver(req, bytes); return false }
    const a = errorAnswer(err, { ...state, maxBodyBytes: deps.config.maxBodyBytes })
    status = a.status
    body = a.body
  }
  res.writeHead(status, {
    'X-Request-Id': requestId,
    ...limitHeaders(deps.config.rateLimit.limit, limit.res),
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body)
  })
  res.end(body)
  deps.recorder.finish(state, 'POST', ROUTE, req.url!, status, started)
  httpFastPathTotal.inc(LABELS)
  return true
}
