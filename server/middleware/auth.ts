import { timingSafeEqual } from 'node:crypto'
import type { Config } from '../../lib/config.js'
import type { Db } from '../../lib/db.js'
import type { AuditKicker, JobSender, ModuleHooks, ServiceContext } from '../../lib/context.js'
import * as access from '../../lib/access/index.js'
import * as audit from '../../lib/audit/index.js'
import * as policy from '../../lib/policy/index.js'
import { AppError } from '../../lib/errors.js'
import type { RequestState, RouteRequest } from '../http/route.js'

export interface AuthDeps {
  config: Readonly<Config>
  db: Db
  sequencer: AuditKicker | null
  jobs: JobSender | null
  hooks: ModuleHooks
}

/** The token of an `Authorization: Bearer <token>` header value, or null. */
export function bearerToken (header: string | undefined): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return m ? m[1] : null
}

/** Reads the token without refusing yet, so the rate limiter can key on the identity. */
export function identify (deps: AuthDeps): (req: RouteRequest) => void {
  return req => {
    if (deps.config.auth.disabled) {
      req.state.identity = access.anonymousIdentity(deps.config.auth)
      return
    }
    const check = access.verifyAccessToken(deps.config.auth, bearerToken(req.headers.authorization))
    if (check.ok) req.state.identity = check.identity
    else req.state.authFailure = check
  }
}

/** 401 (with an auth.failed audit event) unless identify() found a valid identity; else the caller's lib context. */
export function authenticate (deps: AuthDeps): (req: RouteRequest) => Promise<void> {
  return async req => {
    const failure = req.state.authFailure
    if (failure !== undefined) {
      // Best effort: a database outage must not turn a 401 into a 500.
      await audit.recordStandalone(deps.db, failure.auditTenant, null, {
        type: 'auth.failed',
        resourceType: 'auth',
        resourceId: null,
        data: { reason: failure.reason, sub: failure.sub, method: req.method, path: req.path, requestId: req.state.requestId }
      }, t => deps.sequencer?.kick(t)).catch(err => req.state.log.error({ err }, 'could not audit an authentication failure'))
      throw new AppError('UNAUTHORIZED', `authentication failed: ${failure.reason}`, { reason: failure.reason })
    }
    const id = req.state.identity as access.Identity
    req.service = serviceContext(deps, id, req.state, await policy.permissionsFor(deps.db, id.tenant, id.roles, id.scope))
  }
}

/**
 * `permissions`: the effective ones after the tenant policy (lib/policy permissionsFor). `log` is
 * read from the request when first used (the request's child logger is made lazily).
 */
export function serviceContext (deps: AuthDeps, id: access.Identity, state: RequestState, permissions: access.Permissions): ServiceContext {
  return {
    tenantId: id.tenant,
    actor: { sub: id.sub, roles: id.roles },
    scope: id.scope,
    permissions,
    requestId: state.requestId,
    get log () { return state.log },
    db: deps.db,
    config: deps.config,
    jobs: deps.jobs,
    sequencer: deps.sequencer,
    hooks: deps.hooks
  }
}

/** /metrics: open unless METRICS_TOKEN is set, then `Authorization: Bearer <METRICS_TOKEN>`. */
export function metricsToken (config: Readonly<Config>): (req: RouteRequest) => void {
  return req => {
    if (config.metricsToken === null) return
    const got = Buffer.from(bearerToken(req.headers.authorization) ?? '')
    const want = Buffer.from(config.metricsToken)
    if (got.length !== want.length || !timingSafeEqual(got, want)) throw new AppError('UNAUTHORIZED', 'metrics require Bearer METRICS_TOKEN', {})
  }
}
