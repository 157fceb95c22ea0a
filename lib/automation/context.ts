import type { ServiceContext } from '../context.js'
import { permissionsFor, type Permissions } from '../access/index.js'

/** What the engine needs to build a context: a worker's long-lived dependencies. */
export type EngineDeps = Pick<ServiceContext, 'db' | 'config' | 'log' | 'jobs' | 'sequencer'>

/** A context for engine bookkeeping in a tenant (no user behind it). */
export function engineContext (deps: EngineDeps, tenantId: string, requestId: string): ServiceContext {
  return { ...deps, tenantId, requestId, actor: { sub: 'automation', roles: [] }, scope: null, permissions: {} }
}

/**
 * The rule as the actor of its run: `automation:<ruleId>` with the roles of whoever last published
 * it (so workflow guards judge the rule as they would judge its publisher), plus
 * automationRules:execute, which running a published rule needs by definition.
 */
export function ruleContext (ctx: ServiceContext, ruleId: string, roles: string[]): ServiceContext {
  const base = permissionsFor(roles, null)
  const permissions: Permissions = { ...base, automationRules: [...new Set([...(base.automationRules ?? []), 'execute' as const])] }
  return { ...ctx, actor: { sub: `automation:${ruleId}`, roles }, permissions, scope: null }
}
