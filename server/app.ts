import type { IncomingMessage, ServerResponse } from 'node:http'
import Koa from 'koa'
import Router from '@koa/router'
import type { Redis } from 'ioredis'
import type { Config } from '../lib/config.js'
import type { Db } from '../lib/db.js'
import type { Logger } from '../lib/log.js'
import type { AuditKicker, JobSender, ModuleHooks } from '../lib/context.js'
import { AppError } from '../lib/errors.js'
import * as layers from '../lib/layers/index.js'
import { ChangeHub } from '../lib/changes/index.js'
import { watchQueues } from './fleet-metrics.js'
import * as health from '../lib/health/index.js'
import { createLimiter } from './middleware/rate-limit.js'
import { errorAnswer, errorBody } from './middleware/errors.js'
import { requestIdOf, requestRecorder, requestState } from './middleware/observe.js'
import { compileRoutes } from './http/guards.js'
import { exchange, send, type CompiledRoute, type ExchangeDeps } from './http/exchange.js'
import { withEdge } from './http/edge.js'
import { splitUrl, type Answer, type RequestState, type Route } from './http/route.js'
import { declareRoutes } from './routes/index.js'

export interface AppDeps {
  config: Readonly<Config>
  db: Db
  log: Logger
  sequencer: AuditKicker | null
  jobs: JobSender | null
  redis: Redis | null
  hooks: ModuleHooks
  /** True once the process drains for its stop (server/http/drain.ts): readiness answers 503. */
  stopping?: () => boolean
  /** Rendered exports (lib/layers); createApp makes one when not given. */
  renderCache?: layers.RenderCache
}

/** What createApp adds to AppDeps for the routes. */
export interface AppParts {
  renderCache: layers.RenderCache
  /** The process's live change streams (lib/changes). */
  changeHub: ChangeHub
}

export interface App {
  /** The request handler, for http.createServer. */
  callback: () => (req: IncomingMessage, res: ServerResponse) => void
  /** Every declared route (what /openapi/v1.json documents). */
  routes: Route[]
  /** Ends what outlives a request (the live change streams; their clients resume), before the server closes. */
  close: () => void
}

/**
 * The API without listening. Every route is declared in server/routes and compiled once with its
 * guards (server/http/guards.ts); a request reaches its route through the edge
 * (server/http/edge.ts: the busiest routes) or through Koa's router (all the others), and either
 * way runs server/http/exchange.ts. Koa answers what no route takes: 404, 405, 501, OPTIONS.
 */
export function createApp (appDeps: AppDeps): App {
  const deps = {
    ...appDeps,
    renderCache: appDeps.renderCache ?? layers.createRenderCache(appDeps.redis),
    changeHub: new ChangeHub(appDeps.db, appDeps.config.changes, appDeps.log)
  }
  const routes = declareRoutes(deps)
  const limiter = createLimiter({ ...deps.config.rateLimit, redis: deps.redis })
  const compiled = compileRoutes(routes, { config: deps.config, db: deps.db, sequencer: deps.sequencer, jobs: deps.jobs, hooks: deps.hooks, limiter })
  const x: ExchangeDeps = { log: deps.log, recorder: requestRecorder(deps.log) }
  watchQueues(deps.db)
  health.watchProcess(deps.db, deps.config)

  const router = new Router()
  for (const r of compiled) {
    router.register(r.spec.path, [r.spec.method.toUpperCase()], viaKoa(x, r), { name: r.spec.operationId })
  }
  const app = new Koa({ proxy: false })
  app.use(unmatched(x))
  app.use(router.routes())
  app.use(router.allowedMethods())
  app.on('error', () => { /* every answer is written by server/http/exchange.ts */ })
  return {
    callback: () => withEdge(compiled, x, app.callback() as (req: IncomingMessage, res: ServerResponse) => void),
    routes,
    close: () => { deps.changeHub.stop() }
  }
}

/** A route as Koa's router runs it: the same exchange as the edge, writing the answer itself. */
function viaKoa (x: ExchangeDeps, route: CompiledRoute): Koa.Middleware {
  return ctx => {
    ctx.respond = false
    const { path, search } = splitUrl(ctx.req.url ?? '/')
    return exchange(x, route, ctx.req, ctx.res, path, search, ctx.params as Record<string, string>)
  }
}

/**
 * What no route took: the router's 405 (a known path, another method) and 501 (a method served
 * nowhere) with Allow, its OPTIONS answer, else 404; in the error body, with a request id and a
 * log line like any other request.
 */
function unmatched (x: ExchangeDeps): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now()
    // Made only for a request no route answered (a route's exchange makes its own).
    const stateOf = (): RequestState => requestState(x.log, requestIdOf(ctx.req.headers['x-request-id']))
    let state: RequestState | undefined
    let answer: Answer
    try {
      await next()
      if (ctx.respond === false) return
      const allow = ctx.response.get('Allow')
      answer = ctx.status === 200 && ctx.method === 'OPTIONS'
        ? { status: 200, headers: { Allow: allow } }
        : ctx.status === 405 || ctx.status === 501
          ? { ...errorBody(new AppError('BAD_REQUEST', `method ${ctx.method} ${ctx.status === 405 ? 'is not allowed here' : 'is not implemented'}`, { allow })), status: ctx.status, headers: { Allow: allow } }
          : errorBody(new AppError('NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`, { path: ctx.path }))
    } catch (err) {
      answer = errorAnswer(err, state = stateOf())
    }
    state ??= stateOf()
    ctx.respond = false
    const status = send(ctx.res, ctx.method, answer, state)
    x.recorder.finish(state, ctx.method, 'unmatched', ctx.path, status, started)
  }
}
