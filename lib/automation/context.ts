import type { ServiceContext } from '../context.js'
import type { Permissions } from '../access/index.js'
import * as policy from '../policy/index.js'

/** What the engine needs to build a context: a worker's long-lived dependencies. */
export type EngineDeps = Pick<ServiceContext, 'db' | 'config' | 'log' | 'jobs' | 'sequencer' | 'hooks'>

/** A context for engine bookkeeping in a tenant (no user behind it). */
export function engineContext (deps: EngineDeps, tenantId: string, requestId: string): ServiceContext {
  return { ...deps, tenantId, requestId, actor: { sub: 'automation', roles: [] }, scope: null, permissions: {} }
}

/**
 * The rule as the actor of its run: `automation:<ruleId>` with the roles of whoever last published
 * it (so workflow guards judge the rule as they would judge its publisher), granted what the
 * tenant's permission policy grants those roles, exactly as the API grants a caller (lib/policy:
 * cached per tenant and policy version, dropped by the settings NOTIFY feed), plus
 * automationRules:execute, which running a published rule needs by definition. `ctx.db` may be
 * the run's transaction; the policy is read through `pool` (its cache is per pool).
 */
export async function ruleContext (ctx: ServiceContext, pool: ServiceContext['db'], ruleId: string, roles: string[]): Promise<ServiceContext> {
  const base = await policy.permissionsFor(pool, ctx.tenantId, roles, null)
  const permissions: Permissions = { ...base, automationRules: [...new Set([...(base.automationRules ?? []), 'execute' as const])] }
  return { ...ctx, actor: { sub: `automation:${ruleId}`, roles }, permissions, scope: null }
}
