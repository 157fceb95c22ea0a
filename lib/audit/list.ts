import type { ServiceContext } from '../context.js'
import { AppError, isAppError, validationError } from '../errors.js'
import { page, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import { sequencePending } from './sequencer.js'
import { toEventDto, type AuditEventDto } from './dto.js'
import * as sql from './sql.js'

export interface ListEventsQuery extends sql.EventFilter {
  limit: number
  offset: number
  /** Which chain to read: the caller's own (default) or `_system`. */
  tenant?: string
}

// docs/behaviour.md "Authentication and roles": system_admin reads the `_system` chain and nothing
// else; a token's scope still narrows it.
const SYSTEM_CHAIN_GRANTS = { system_admin: { auditLogs: ['read' as const] } }

/** The permissions that apply to reading `chain`: one's own tenant's, system_admin's for `_system`, none elsewhere. */
function chainPermissions (ctx: ServiceContext, chain: string): access.Permissions {
  if (chain === access.SYSTEM_TENANT) {
    return access.computePermissions(ctx.actor.roles.filter(r => r === 'system_admin'), ctx.scope, SYSTEM_CHAIN_GRANTS)
  }
  return chain === ctx.tenantId ? ctx.permissions : {}
}

/**
 * Resolves and authorizes the chain a read targets (`?tenant=`). A refusal is a 403 recorded as
 * permission.denied in the caller's own chain, like every other denial (lib/access authorize).
 */
export async function authorizeChain (ctx: ServiceContext, requested: string | undefined): Promise<string> {
  const chain = requested ?? ctx.tenantId
  try {
    await access.authorize({ ...ctx, permissions: chainPermissions(ctx, chain) }, 'auditLogs', 'read')
  } catch (err) {
    if (!isAppError(err) || err.code !== 'FORBIDDEN' || (chain === ctx.tenantId && chain !== access.SYSTEM_TENANT)) throw err
    const why = chain === access.SYSTEM_TENANT
      ? 'reading the _system audit chain requires the system_admin role'
      : `tenant "${chain}" is not yours: audit chains of other tenants cannot be read`
    throw new AppError('FORBIDDEN', why, { ...err.details, tenant: chain })
  }
  return chain
}

/**
 * GET /v1/audit/events: newest first. The chain's pending events are sequenced first, so an event
 * whose write was just answered is listed (docs/behaviour.md "Audit": listed within one second);
 * unsequenced rows are never shown, since they have no sequence or hash yet.
 */
export async function listEvents (ctx: ServiceContext, q: ListEventsQuery): Promise<Page<AuditEventDto>> {
  const chain = await authorizeChain(ctx, q.tenant)
  if (q.from !== undefined && q.to !== undefined && Date.parse(q.to) < Date.parse(q.from)) {
    throw validationError('to', 'must not be before from')
  }
  await sequencePending(ctx.db, chain)
  const filter: sql.EventFilter = { type: q.type, resourceType: q.resourceType, resourceId: q.resourceId, from: q.from, to: q.to }
  const { rows, total } = await sql.listEvents(ctx.db, chain, filter, q.limit, q.offset)
  return page(rows.map(toEventDto), q.limit, q.offset, total)
}
