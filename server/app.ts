import type { IncomingMessage, ServerResponse } from 'node:http'
import Koa from 'koa'
import '../lib/modules.js'
import Router from '@koa/router'
import type { Redis } from 'ioredis'
import type { Config } from '../lib/config.js'
import type { Db } from '../lib/db.js'
import type { Logger } from '../lib/log.js'
import type { AuditKicker, JobSender } from '../lib/context.js'
import { observe, requestRecorder } from './middleware/observe.js'
import { errorBodies } from './middleware/errors.js'
import { jsonBody } from './middleware/body.js'
import { createLimiter, rateLimit } from './middleware/rate-limit.js'
import { identify, requireIdentity, requireMetricsToken } from './middleware/auth.js'
import { requireFeature } from './middleware/license.js'
import type { RouteGuards } from './openapi/registry.js'
import { registerPlatformRoutes } from './routes/platform.js'
import { registerObjectTypeRoutes } from './routes/object-types.js'
import { registerObjectRoutes } from './routes/objects.js'
import { registerAuditRoutes } from './routes/audit.js'
import { registerWorkflowRoutes } from './routes/workflows.js'
import { registerRuleRoutes } from './routes/rules.js'
import { registerRelationRoutes } from './routes/relations.js'
import { registerQueryRoutes } from './routes/queries.js'
import { registerAutomationRoutes } from './routes/automation.js'
import { watchQueues } from '../jobs/metrics.js'
import { registerLicenseRoutes } from './routes/license.js'
import { registerPermissionRoutes } from './routes/permissions.js'
import { registerGraphqlRoutes } from './graphql/index.js'
import { registerLayerRoutes } from './routes/layers.js'
import { registerOgcRoutes } from './routes/ogc.js'
import { registerMapPage } from './map/index.js'
import { groupedRoutes } from './http/route-groups.js'
import { withTileHits } from './http/tile-hits.js'
import { withHotReads } from './http/hot-reads.js'
import { withHotWrites } from './http/hot-writes.js'
import { withHotIngress } from './http/hot-ingress.js'
import * as layers from '../lib/layers/index.js'
import type { RenderCache } from '../lib/layers/index.js'

export interface AppDeps {
  config: Readonly<Config>
  db: Db
  log: Logger
  sequencer: AuditKicker | null
  jobs: JobSender | null
  redis: Redis | null
  /** Rendered exports (lib/layers); createApp makes one when not given. */
  renderCache?: RenderCache
}

export type RouteRegistrar = (router: Router, guards: RouteGuards, deps: AppDeps) => void

/** Every route module, in one list: the OpenAPI document is built from what these declare. */
export const ROUTE_MODULES: RouteRegistrar[] = [
  registerPlatformRoutes,
  registerObjectTypeRoutes,
  registerObjectRoutes,
  registerAuditRoutes,
  registerWorkflowRoutes,
  registerRuleRoutes,
  registerRelationRoutes,
  registerQueryRoutes,
  registerAutomationRoutes,
  registerLicenseRoutes,
  registerPermissionRoutes,
  registerGraphqlRoutes,
  registerLayerRoutes,
  registerOgcRoutes
]

/** Builds the Koa app without listening (tests drive app.callback()). */
export function createApp (appDeps: AppDeps): Koa {
  const deps = { ...appDeps, renderCache: appDeps.renderCache ?? layers.createRenderCache(appDeps.redis) }
  const app = new Koa({ proxy: false })
  const router = new Router()
  const limiter = createLimiter({ ...deps.config.rateLimit, redis: deps.redis })
  const limited = rateLimit(limiter, deps.config.rateLimit.limit)
  const authDeps = { config: deps.config, db: deps.db, sequencer: deps.sequencer, jobs: deps.jobs }
  const who = identify(authDeps)
  const must = requireIdentity(authDeps)
  const metricsAuth = requireMetricsToken(deps.config)

  // Per-route guards follow the declared auth kind; the order matters: identify before the
  // limiter (it keys on the identity), the limiter before the 401 (failed logins are counted).
  // Bodies are parsed last, after routing, limiting and authentication: an unauthenticated or
  // throttled client never makes us read its body, and a route that takes none ignores it.
  const body = jsonBody(deps.config.maxBodyBytes)
  const guards: RouteGuards = spec => {
    const limit = spec.unlimited === true ? [] : [limited]
    const parse = spec.body !== undefined ? [body] : []
    const feature = spec.feature !== undefined ? [requireFeature(spec.feature)] : []
    switch (spec.auth) {
      case 'bearer': return [who, ...limit, must, ...feature, ...parse]
      case 'metrics': return [...limit, metricsAuth]
      case 'webhook': case 'none': return [...limit, ...parse]
    }
  }
  for (const register of ROUTE_MODULES) register(router, guards, deps)
  registerMapPage(router, guards)
  watchQueues(deps.db)

  const recorder = requestRecorder(deps.log)
  app.use(observe(deps.log, recorder))
  app.use(errorBodies())
  app.use(groupedRoutes(router))
  app.use(router.allowedMethods())
  app.on('error', () => { /* answered by errorBodies; logged there */ })
  // Tile requests, the hottest object reads, the create and the automation ingress first try the
  // HTTP edge's fast paths (server/http/tile-hits.ts, hot-reads.ts, hot-writes.ts, hot-ingress.ts);
  // app.listen and the tests' app.callback() both get the wrapped handler.
  const koaCallback = app.callback.bind(app)
  const tileHits = { config: deps.config, auth: authDeps, log: deps.log, limiter, cache: deps.renderCache, recorder }
  const ingress = { config: deps.config, ingress: deps, limiter, recorder }
  app.callback = (() => withTileHits(tileHits, withHotReads(tileHits, withHotWrites(tileHits, withHotIngress(ingress, koaCallback() as (req: IncomingMessage, res: ServerResponse) => void))))) as unknown as typeof app.callback
  return app
}
