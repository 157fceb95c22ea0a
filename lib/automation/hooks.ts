import type { ServiceContext } from '../context.js'

/**
 * Checks other modules add without lib/automation importing them (lib/license registers the
 * `automation` feature switch in lib/license/hooks.ts; importing lib/license here would make a
 * cycle). Each runs with a context of the tenant and throws an AppError to refuse:
 * `tenantGate` before the ingress accepts a call and before a run applies anything.
 */
export const automationHooks = {
  tenantGate: [] as Array<(ctx: ServiceContext) => Promise<void>>
}

export async function assertTenantGate (ctx: ServiceContext): Promise<void> {
  for (const check of automationHooks.tenantGate) await check(ctx)
}
