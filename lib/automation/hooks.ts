import type { ServiceContext } from '../context.js'
import { isAppError } from '../errors.js'

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

/** A check's refusal (an AppError) as a run's error `{code, message}`, null when it passes; anything else propagates. */
export async function refusalOf (check: Promise<void>): Promise<{ code: string, message: string } | null> {
  try {
    await check
    return null
  } catch (err) {
    if (!isAppError(err)) throw err
    return { code: err.code, message: err.message }
  }
}
