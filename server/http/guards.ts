import type { RateLimiterAbstract } from 'rate-limiter-flexible'
import type { ServiceContext } from '../../lib/context.js'
import * as license from '../../lib/license/index.js'
import { authenticate, identify, metricsToken, type AuthDeps } from '../middleware/auth.js'
import { rateLimit } from '../middleware/rate-limit.js'
import { jsonBody } from '../middleware/body.js'
import { recentTenants, tenantGate } from '../middleware/tenant-gate.js'
import type { CompiledRoute } from './exchange.js'
import type { Route, RouteRequest, RouteSpec } from './route.js'

export interface GuardDeps extends AuthDeps {
  limiter: RateLimiterAbstract
}

/** 403 FEATURE_DISABLED when the caller's tenant license switches `feature` off (RouteSpec.feature). */
function requireFeature (feature: license.Feature): (req: RouteRequest) => Promise<void> | undefined {
  return req => {
    const service: ServiceContext = req.service
    // Without a license public key every feature is on (development): nothing to wait for.
    return service.config.license.publicKey === null ? undefined : license.assertFeature(service, feature)
  }
}

/**
 * For a route whose rendering is heavy (RouteSpec.heavy 'render'): the tenant's heavy lane,
 * entered when the rendering starts (ServiceContext.heavyLane) rather than here, so a tile or page
 * the render cache holds, a 304 or a refused parameter takes no slot. Entering it gives back the
 * tenant's slot first: a rendering waits for the lane holding nothing, as a heavy request does, so
 * a tenant's renderings in that queue leave its other slots to its gets and writes. The heavy slot
 * is released once the answer is written (state.release).
 */
function heavyLane (gate: (req: RouteRequest) => Promise<void> | undefined): (req: RouteRequest) => undefined {
  return req => {
    let entered: Promise<void> | undefined | null = null
    req.service.heavyLane = () => {
      if (entered === null) {
        const general = req.state.release
        req.state.release = undefined
        general?.()
        try { entered = gate(req) } catch (err) { entered = Promise.reject(err) }
      }
      return entered
    }
    return undefined
  }
}

/**
 * Every route's guards, from its declared auth kind, in this order: identify before the limiter
 * (it keys on the identity), the limiter before the 401 (failed logins are counted), the tenant
 * gate once the tenant is known (a queued request has not been read yet), the body last, after
 * routing, limiting and authentication: an unauthenticated or throttled client never makes us
 * read its body, and a route that takes none ignores it. Unlimited routes (health, metrics) pass
 * no gate; webhook routes learn their tenant only in the handler.
 */
export function compileRoutes (routes: Route[], deps: GuardDeps): CompiledRoute[] {
  const who = identify(deps)
  const must = authenticate(deps)
  const limited = rateLimit(deps.limiter, deps.config.rateLimit.limit)
  const metrics = metricsToken(deps.config)
  const body = jsonBody(deps.config.maxBodyBytes, 'parsed')
  const bodyText = jsonBody(deps.config.maxBodyBytes, 'text')
  const tg = deps.config.tenantGate
  // Both gates record who enters; the heavy lane widens for a tenant that has the process to itself.
  const recent = tg.aloneMs > 0 ? recentTenants(tg.aloneMs) : undefined
  const gate = tg.maxConcurrent > 0 ? [tenantGate({ ...tg, recent })] : []
  // One heavy lane per process, entered either way (RouteSpec.heavy), always in place of the
  // tenant's other slot: a heavy request at once, a rendering when the render cache misses.
  // Nothing waits for one of the two kinds of slot holding the other: no cycle.
  const lane = tg.maxConcurrent > 0 && tg.maxConcurrentHeavy > 0
    ? tenantGate({ ...tg, maxConcurrent: tg.maxConcurrentHeavy, kind: 'heavy requests', burst: { slots: tg.heavyBurst, creditMs: tg.heavyCreditMs }, recent, alone: recent === undefined ? undefined : tg.maxConcurrent, paceBytesPerSecond: tg.heavyBytesPerSecond })
    : null
  const heavy = { request: lane === null ? gate : [lane], render: lane === null ? gate : [...gate, heavyLane(lane)] }
  const guardsOf = (spec: RouteSpec): CompiledRoute['guards'] => {
    const limit = spec.unlimited === true ? [] : [limited]
    const fair = spec.unlimited === true ? [] : spec.heavy !== undefined ? heavy[spec.heavy] : gate
    const parse = spec.body === undefined ? [] : [spec.bodyText === true ? bodyText : body]
    const feature = spec.feature !== undefined ? [requireFeature(spec.feature)] : []
    switch (spec.auth) {
      case 'bearer': return [who, ...limit, must, ...fair, ...feature, ...parse]
      case 'metrics': return [...limit, metrics]
      case 'webhook': case 'none': return [...limit, ...parse]
    }
  }
  return routes.map(r => ({ ...r, guards: guardsOf(r.spec) }))
}
