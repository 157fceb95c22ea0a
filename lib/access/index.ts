export * from './grants.js'
export * from './tokens.js'
import type { ServiceContext } from '../context.js'
import { AppError } from '../errors.js'
import { can, type Action, type Resource } from './grants.js'

/**
 * The one permission check (every route's lib call makes it before reading anything, so a 403
 * never tells whether a resource exists). Throws FORBIDDEN with `details.required`
 * ("objects:write") unless the caller holds `resource:action`; a denial is written to the audit
 * chain (permission.denied, through ctx.hooks: lib/audit reads through this module) in its own
 * transaction before the error propagates.
 */
export async function authorize (ctx: ServiceContext, resource: Resource, action: Action): Promise<void> {
  if (can(ctx.permissions, resource, action)) return
  await ctx.hooks.recordRefusal(ctx, {
    type: 'permission.denied',
    resourceType: resource,
    resourceId: null,
    data: { resource, action, roles: ctx.actor.roles }
  })
  const held = ctx.actor.roles.length > 0 ? `you have ${ctx.actor.roles.join(', ')}` : 'your token has no roles'
  throw new AppError('FORBIDDEN', `requires ${resource}:${action}; ${held}`, { required: `${resource}:${action}`, resource, action })
}

/** The caller as GET /v1/auth/me (and GraphQL `me`) shows it (docs/behaviour.md "Authentication and roles"). */
export function describeCaller (ctx: ServiceContext) {
  return {
    sub: ctx.actor.sub,
    tenant: ctx.tenantId,
    roles: ctx.actor.roles,
    scope: ctx.scope,
    permissions: ctx.permissions,
    authDisabled: ctx.config.auth.disabled
  }
}
