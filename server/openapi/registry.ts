import type Router from '@koa/router'
import type { Middleware } from 'koa'
import type { Feature } from '../../lib/license/index.js'

/**
 * Every route is declared once, here, with the same JSON Schemas that lib uses to validate its
 * input. The router is built from these declarations and so is /openapi/v1.json: a path cannot
 * be served without appearing in the document.
 */

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete'
/** bearer: access token; none: public; metrics: METRICS_TOKEN when set; webhook: a rule's webhook token. */
export type AuthKind = 'bearer' | 'none' | 'metrics' | 'webhook'

export interface ResponseSpec {
  description: string
  schema?: object
  /** Defaults to application/json. */
  contentType?: string
  headers?: Record<string, { description: string, schema: object }>
}

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
   * The license module switch this route belongs to (CONTRACT "Licensing"): when the tenant's
   * license sets it to false, the route answers 403 FEATURE_DISABLED (checked by the guards for
   * bearer routes; a webhook route's handler checks it once it knows the tenant).
   */
  feature?: Feature
  pathParams?: Record<string, { description: string, schema: object }>
  query?: { type: 'object', properties: Record<string, object>, required?: string[], additionalProperties?: boolean }
  headers?: Record<string, { description: string, required?: boolean, schema: object }>
  body?: object
  bodyRequired?: boolean
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

export const declaredRoutes: RouteSpec[] = []

export type RouteGuards = (spec: RouteSpec) => Middleware[]

/** Registers a route on the router and in the document. */
export function defineRoute (router: Router, guards: RouteGuards, spec: RouteSpec, handler: Middleware): void {
  if (!declaredRoutes.some(r => r.method === spec.method && r.path === spec.path)) declaredRoutes.push(spec)
  router.register(spec.path, [spec.method.toUpperCase()], [...guards(spec), handler], { name: spec.operationId })
}
