import type { Middleware } from 'koa'
import type { ServiceContext } from '../../lib/context.js'
import * as license from '../../lib/license/index.js'

/** 403 FEATURE_DISABLED when the caller's tenant license switches `feature` off (RouteSpec.feature). */
export function requireFeature (feature: license.Feature): Middleware {
  return async (ctx, next) => {
    const service = ctx.state.service as ServiceContext
    // Without a license public key every feature is on (development): no await on the hot path.
    if (service.config.license.publicKey !== null) await license.assertFeature(service, feature)
    return next()
  }
}
