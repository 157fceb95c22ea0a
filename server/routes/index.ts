import type { AppDeps, AppParts } from '../app.js'
import type { Route } from '../http/route.js'
import { buildOpenApi } from '../openapi/document.js'
import { platformRoutes } from './platform.js'
import { objectTypeRoutes } from './object-types.js'
import { objectRoutes } from './objects.js'
import { auditRoutes } from './audit.js'
import { workflowRoutes } from './workflows.js'
import { ruleRoutes } from './rules.js'
import { relationRoutes } from './relations.js'
import { queryRoutes } from './queries.js'
import { automationRoutes } from './automation.js'
import { licenseRoutes } from './license.js'
import { permissionRoutes } from './permissions.js'
import { graphqlRoutes } from '../graphql/index.js'
import { layerRoutes } from './layers.js'
import { changeRoutes } from './changes.js'
import { ogcRoutes } from './ogc.js'
import { mapRoutes } from '../map/index.js'

export interface RouteDeps extends Omit<AppDeps, 'renderCache'>, AppParts {
  /** /openapi/v1.json, built from every declared route. */
  openapi: () => object
}

/** A resource's routes: thin handlers over lib, one file per resource. */
export type RouteModule = (deps: RouteDeps) => Route[]

/** Every route module, in one list, in the order Koa's router tries them. */
const MODULES: RouteModule[] = [
  platformRoutes,
  objectTypeRoutes,
  objectRoutes,
  auditRoutes,
  workflowRoutes,
  ruleRoutes,
  relationRoutes,
  queryRoutes,
  automationRoutes,
  licenseRoutes,
  permissionRoutes,
  graphqlRoutes,
  layerRoutes,
  changeRoutes,
  ogcRoutes,
  mapRoutes
]

/** Every route the API serves; the OpenAPI document is built from exactly these. */
export function declareRoutes (deps: AppDeps & AppParts): Route[] {
  let document: object | undefined
  const routes: Route[] = []
  const routeDeps: RouteDeps = { ...deps, openapi: () => (document ??= buildOpenApi(routes.map(r => r.spec), deps.config.release)) }
  for (const module of MODULES) routes.push(...module(routeDeps))
  return routes
}
