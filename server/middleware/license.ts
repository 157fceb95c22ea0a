import type { Middleware } from 'koa'
import type { ServiceContext } from '../../lib/context.js'
import * as license from '../../lib/license/index.js'

/** 403 FEATURE_DISABLED when the caller's tenant license switches `feature` off (RouteSpec.feature). */
export function requireFeature (feature: license.Feature): Middleware {
  return async (ctx, next) => {
    await license.assertFeature(ctx.state.service as ServiceContext, feature)
    return next()
  }
}
