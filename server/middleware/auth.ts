import { timingSafeEqual } from 'node:crypto'
import type { Context, Middleware } from 'koa'
import type { Config } from '../../lib/config.js'
import type { Db } from '../../lib/db.js'
import type { AuditKicker, JobSender, ServiceContext } from '../../lib/context.js'
import * as access from '../../lib/access/index.js'
import * as audit from '../../lib/audit/index.js'
import * as policy from '../../lib/policy/index.js'
import { AppError } from '../../lib/errors.js'

export interface AuthDeps {
  config: Readonly<Config>
  db: Db
  sequencer: AuditKicker | null
  jobs: JobSender | null
}

/** The token of an `Authorization: Bearer <token>` header value, or null. */
export function bearerToken (header: string | undefined): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return m ? m[1] : null
}

const bearer = (ctx: Context): string | null => bearerToken(ctx.get('Authorization'))

/** Reads the token without refusing yet, so the rate limiter can key on the identity. */
export function identify (deps: AuthDeps): Middleware {
  return async (ctx, next) => {
    if (deps.config.auth.disabled) {
      ctx.state.identity = access.anonymousIdentity(deps.config.auth)
      return next()
    }
    const check = access.verifyAccessToken(deps.config.auth, bearer(ctx))
    if (check.ok) ctx.state.identity = check.identity
    else ctx.state.authFailure = check
    return next()
  }
}

/** 401 (with an auth.failed audit event) unless identify() found a valid identity. */
export function requireIdentity (deps: AuthDeps): Middleware {
  return async (ctx, next) => {
    const failure = ctx.state.authFailure as Extract<access.TokenCheck, { ok: false }> | undefined
    if (failure) {
      // Best effort: a database outage must not turn a 401 into a 500.
      await audit.recordStandalone(deps.db, failure.auditTenant, null, {
        type: 'auth.failed',
        resourceType: 'auth',
        resourceId: null,
        data: { reason: failure.reason, sub: failure.sub, method: ctx.method, path: ctx.path, requestId: ctx.state.requestId }
      }, t => deps.sequencer?.kick(t)).catch(err => ctx.state.log?.error({ err }, 'could not audit an authentication failure'))
      throw new AppError('UNAUTHORIZED', `authentication failed: ${failure.reason}`, { reason: failure.reason })
    }
    const id = ctx.state.identity as access.Identity
    ctx.state.service = serviceContext(deps, id, ctx.state, await policy.permissionsFor(deps.db, id.tenant, id.roles, id.scope))
    return next()
  }
}

/**
 * `permissions`: the effective ones after the tenant policy (lib/policy permissionsFor). `log` is
 * read from the request when first used (observe makes the child logger lazily).
 */
export function serviceContext (deps: AuthDeps, id: access.Identity, state: Record<string, any>, permissions: access.Permissions): ServiceContext {
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
    sequencer: deps.sequencer
  }
}

/** /metrics: open unless METRICS_TOKEN is set, then `Authorization: Bearer <METRICS_TOKEN>`. */
export function requireMetricsToken (config: Readonly<Config>): Middleware {
  return async (ctx, next) => {
    if (config.metricsToken !== null) {
      const got = Buffer.from(bearer(ctx) ?? '')
      const want = Buffer.from(config.metricsToken)
      if (got.length !== want.length || !timingSafeEqual(got, want)) throw new AppError('UNAUTHORIZED', 'metrics require Bearer METRICS_TOKEN', {})
    }
    return next()
  }
}
