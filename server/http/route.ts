import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import type { TLSSocket } from 'node:tls'
import { parse as parseQueryString, type ParsedUrlQuery } from 'node:querystring'
import type { Identity, TokenCheck } from '../../lib/access/index.js'
import type { ServiceContext } from '../../lib/context.js'
import type { Feature } from '../../lib/license/index.js'
import type { Logger } from '../../lib/log.js'

/**
 * A route is declared once: its spec (what /openapi/v1.json documents and what the guards
 * enforce) and its handler, which reads a RouteRequest and returns an Answer. Both ways a request
 * can reach it (Koa's router, or the edge for the routes server/http/edge.ts lists) build the
 * same RouteRequest, run the same guards and handler, and write the Answer with the same
 * function (server/http/exchange.ts).
 */
export interface Route {
  spec: RouteSpec
  handle: (req: RouteRequest) => Promise<Answer> | Answer
}

export const route = (spec: RouteSpec, handle: Route['handle']): Route => ({ spec, handle })

/** What a handler answers (written by server/http/exchange.ts `send`). */
export interface Answer {
  /** Default 200. */
  status?: number
  headers?: Record<string, string | number>
  /** A value sent as JSON. */
  body?: unknown
  /** Or bytes sent as they are (with `type`): text, a Buffer, Buffer pieces, or a stream. */
  bytes?: string | Buffer | readonly Buffer[] | Readable
  /** Content-Type; JSON_TYPE for `body`. */
  type?: string
}

export const JSON_TYPE = 'application/json; charset=utf-8'

/** A request's own state: its id, its logger (made on first use), what the guards found. */
export interface RequestState {
  requestId: string
  log: Logger
  /** The route's template, once a route took the request (metrics and log lines). */
  route?: string
  identity?: Identity
  authFailure?: Extract<TokenCheck, { ok: false }>
  maxBodyBytes?: number
  /** Gives back what a guard holds until the answer is written (the tenant gate's slot); idempotent. */
  release?: () => void
  /**
   * Charges bytes of the answer to the tenant's allowance (the heavy lane's pace, tenant-gate.ts)
   * and says how many ms to wait before sending more; absent: unpaced.
   */
  pace?: (bytes: number) => number
}

/** The request as a route sees it, the same whichever way it came in. */
export class RouteRequest {
  /** The parsed JSON body (the body guard sets it on routes that declare one). */
  body: unknown = undefined
  /** Headers every answer to this request carries, whatever it is (the rate limit's). */
  readonly answerHeaders: Record<string, string> = {}
  private ctx: ServiceContext | undefined
  private parsedQuery: ParsedUrlQuery | undefined

  constructor (
    readonly raw: IncomingMessage,
    readonly path: string,
    private readonly search: string,
    readonly params: Record<string, string>,
    readonly state: RequestState
  ) {}

  get method (): string { return this.raw.method ?? 'GET' }
  get headers (): IncomingHttpHeaders { return this.raw.headers }
  /** The path and query string as the client sent them. */
  get url (): string { return this.raw.url ?? this.path }
  /** node:querystring's parse of the query string (repeated keys give arrays). */
  get query (): ParsedUrlQuery { return (this.parsedQuery ??= this.search === '' ? {} : parseQueryString(this.search)) }

  /** One request header's value ('' when absent; repeated ones joined). */
  header (name: string): string {
    const v = this.raw.headers[name.toLowerCase()]
    return v === undefined ? '' : Array.isArray(v) ? v.join(', ') : v
  }

  /** The client's address as this process sees it (no proxy headers are trusted). */
  get ip (): string { return this.raw.socket.remoteAddress ?? '' }

  /** The scheme and Host the client used. */
  get origin (): string { return `${(this.raw.socket as TLSSocket).encrypted === true ? 'https' : 'http'}://${this.header('host')}` }

  /** The caller's lib context: set by the authentication guard, so every bearer route has one. */
  get service (): ServiceContext {
    if (this.ctx === undefined) throw new Error(`route ${this.state.route ?? this.path} read the service context without authentication`)
    return this.ctx
  }

  set service (ctx: ServiceContext) { this.ctx = ctx }
}

/** Splits a request target into its path and query string. */
export function splitUrl (url: string): { path: string, search: string } {
  const q = url.indexOf('?')
  return q === -1 ? { path: url, search: '' } : { path: url.slice(0, q), search: url.slice(q + 1) }
}

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete'
/** bearer: access token; none: public; metrics: METRICS_TOKEN when set; webhook: a rule's webhook token. */
export type AuthKind = 'bearer' | 'none' | 'metrics' | 'webhook'

export interface ResponseSpec {
  description: string
  schema?: object
  /** Defaults to application/json. */
  contentType?: string
  /** Further media types of the same answer (content negotiation by Accept), each with its schema. */
  alternatives?: Record<string, object>
  headers?: Record<string, { description: string, schema: object }>
}

/**
 * What a route declares. The guards follow it (server/http/guards.ts) and /openapi/v1.json is
 * built from it, with the same JSON Schemas lib validates with: a path cannot be served without
 * appearing in the document.
 */
export interface RouteSpec {
  method: HttpMethod
  /** Koa style: /v1/objects/:id */
  path: string
  operationId: string
  summary: string
  description: string
  tag: string
  auth: AuthKind
  /** Exempt from rate limiting (health, metrics). */
  unlimited?: boolean
  /**
   * A request whose cost the caller chooses: it also takes a slot of the tenant's heavy lane,
   * TENANT_MAX_CONCURRENT_HEAVY_REQUESTS. 'request' (a query run, the NDJSON stream, a dry-run
   * validation, GraphQL): in place of one of the tenant's TENANT_MAX_CONCURRENT_REQUESTS, so a
   * request waiting for the lane holds nothing else. 'render' (tiles, GeoJSON and OGC pages):
   * only when the render cache does not hold the answer (ServiceContext.heavyLane), so a cache
   * hit costs what a get costs; the rendering then gives back its general slot and waits for the
   * lane holding nothing, as a 'request' does.
   */
  heavy?: 'request' | 'render'
  /**
   * The license module switch this route belongs to (docs/behaviour.md "Licensing"): when the
   * tenant's license sets it to false, the route answers 403 FEATURE_DISABLED (checked by the
   * guards for bearer routes; a webhook route's handler checks it once it knows the tenant).
   */
  feature?: Feature
  pathParams?: Record<string, { description: string, schema: object }>
  query?: { type: 'object', properties: Record<string, object>, required?: string[], additionalProperties?: boolean }
  headers?: Record<string, { description: string, required?: boolean, schema: object }>
  body?: object
  bodyRequired?: boolean
  /**
   * The handler gets the body as its JSON text, not parsed, and reads it off the event loop (a
   * dry run's body is read and checked in the evaluation pool); `body` still documents it.
   */
  bodyText?: boolean
  responses: Record<number, ResponseSpec>
  /** Error codes this operation can answer with, for the document. */
  errors?: number[]
  /**
   * The documented example (required: test/api/contract.test.ts replays every route's example
   * against the running service and fails naming a route without one). See RouteExample.
   */
  example?: RouteExample
}

/** A request made before an example to prepare data of its own (e.g. a spare object to delete). */
export interface ExampleSetup {
  method: HttpMethod
  /** A concrete path; may hold placeholders: /v1/objects/{objectId} */
  path: string
  body?: unknown
  saves?: Record<string, string>
}

/**
 * One request and the status it answers, replayed in order by the contract test on a fresh tenant
 * (owner token on bearer routes). Strings may hold placeholders `{name}`: a value an earlier
 * example (or setup step) saved from its response, or one the caller supplies (`{licenseKey}`).
 * In the document, a placeholder whose name ends in `Id` is shown as a fixed sample UUID (so the
 * example validates against `format: uuid`), listed with the others in `x-example-placeholders`.
 */
export interface RouteExample {
  summary: string
  params?: Record<string, string | number>
  query?: Record<string, unknown>
  headers?: Record<string, string>
  body?: unknown
  /** The credential for Authorization: Bearer on routes not called with the access token (the webhook token). */
  bearer?: string
  /** The status this example answers (its response is validated against the documented schema). */
  status: number
  /** Values later examples use: placeholder name -> dotted path in the response body ('id', 'items.0.id'). */
  saves?: Record<string, string>
  /** operationIds whose examples must run first (beyond those that save a placeholder this one uses). */
  after?: string[]
  setup?: ExampleSetup[]
}
