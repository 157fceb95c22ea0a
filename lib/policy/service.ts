import type { ServiceContext } from '../context.js'
import type { Db } from '../db.js'
import { runStatements } from '../db.js'
import { AppError, validationError } from '../errors.js'
import { parse } from '../validation.js'
import * as access from '../access/index.js'
import { runWrite } from '../pipeline.js'
import { changedStatement, TenantSettingsCache } from '../settings/index.js'
import * as schema from './schema.js'
import * as sql from './sql.js'

type Roles = Record<string, access.RoleGrants>

const cache = new TenantSettingsCache<sql.PolicyRow>('policy')

function policyOf (db: Db, tenantId: string): Promise<sql.PolicyRow> {
  return cache.get(db, tenantId, () => sql.findPolicy(db, tenantId))
}

/**
 * Effective permissions of a caller: the tenant policy's grants (built-in defaults for roles it
 * does not name), narrowed by the token's scope. What the API and the worker put in every
 * ServiceContext. A tenant without a policy costs a cache lookup.
 */
export async function permissionsFor (db: Db, tenantId: string, roles: readonly string[], scope: string | null): Promise<access.Permissions> {
  const policy = await policyOf(db, tenantId)
  return access.permissionsFor(roles, scope, policy.version === 0 ? undefined : { key: `${tenantId}|${policy.version}`, roles: policy.roles })
}

interface PolicyDto { roles: Roles, version: number, updatedAt: string | null }

function toPolicyDto (row: sql.PolicyRow): PolicyDto {
  const roles: Roles = {}
  for (const r of access.BUILT_IN_ROLES) roles[r] = access.DEFAULT_GRANTS[r]
  Object.assign(roles, row.roles)
  return { roles, version: row.version, updatedAt: row.updated_at?.toISOString() ?? null }
}

export async function getPolicy (ctx: ServiceContext): Promise<PolicyDto> {
  await access.authorize(ctx, 'policy', 'read')
  return toPolicyDto(await sql.findPolicy(ctx.db, ctx.tenantId))
}

const ROLE_NAME = /^[A-Za-z0-9._:-]{1,64}$/

/** The owner can never lose policy read and write: the tenant could not be administered again. */
function checkRoles (roles: Roles): void {
  const bad = Object.keys(roles).find(r => !ROLE_NAME.test(r))
  if (bad !== undefined) throw validationError(`roles.${bad}`, 'a role name is 1 to 64 of A-Za-z0-9._:-')
  const owner = roles.owner
  if (owner === undefined) return
  for (const a of ['read', 'write'] as const) {
    if (!(owner.policy ?? []).includes(a)) throw validationError('roles.owner.policy', `owner must keep policy ${a}, or no one could change the policy again`)
  }
}

/**
 * PUT /v1/permissions/policy: replaces the tenant's roles (version +1), audited policy.updated,
 * and announced to every process in the same transaction. `ifMatch` (optional) must be the
 * current version (409 VERSION_CONFLICT otherwise).
 */
export async function putPolicy (ctx: ServiceContext, body: unknown, ifMatch: number | null): Promise<PolicyDto> {
  const input = parse<{ roles: Roles }>(schema.PutPolicyBody, body)
  checkRoles(input.roles)
  const row = await runWrite(ctx, { resource: 'policy', action: 'write' }, async w => {
    const current = await sql.lockPolicy(w.tx, ctx.tenantId)
    if (ifMatch !== null && ifMatch !== current.version) {
      throw new AppError('VERSION_CONFLICT', `policy is at version ${current.version}, not ${ifMatch}`, { currentVersion: current.version })
    }
    const saved = await sql.savePolicy(w.tx, ctx.tenantId, input.roles, current.version + 1, ctx.actor.sub)
    await runStatements(w.tx, [changedStatement('policy', ctx.tenantId)])
    w.record({ audit: { type: 'policy.updated', resourceType: 'policy', resourceId: ctx.tenantId, data: { version: saved.version, roles: input.roles } } })
    return saved
  })
  cache.forget(ctx.db, ctx.tenantId)
  return toPolicyDto(row)
}
