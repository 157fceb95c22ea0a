import type { Db } from '../../lib/db.js'
import type { ModuleHooks, ServiceContext } from '../../lib/context.js'
import { loadConfig } from '../../lib/config.js'
import { createLogger } from '../../lib/log.js'
import { computePermissions } from '../../lib/access/index.js'
import { sequencePending } from '../../lib/audit/index.js'
import * as objectTypes from '../../lib/object-types/index.js'

export const DEMO_TENANT = 'demo'
export const DEMO_TYPE_KEY = 'site'

/**
 * A demo tenant with one published object type. Goes through the domain services (so it is
 * audited like any other change) and does nothing when the type already exists.
 */
export async function seedDemo (db: Db, hooks: ModuleHooks): Promise<{ tenant: string, typeId: string, created: boolean }> {
  const existing = await db('object_types').where({ tenant_id: DEMO_TENANT, key: DEMO_TYPE_KEY }).whereNull('deleted_at').first('id')
  if (existing) return { tenant: DEMO_TENANT, typeId: existing.id, created: false }
  const ctx: ServiceContext = {
    tenantId: DEMO_TENANT,
    actor: { sub: 'setup', roles: ['owner'] },
    scope: null,
    permissions: computePermissions(['owner'], null),
    requestId: 'setup',
    log: createLogger('seed', 'warn'),
    db,
    config: loadConfig({ DATABASE_URL: 'postgres://unused', AUTH_DISABLED: 'true' }),
    jobs: null,
    sequencer: null,
    hooks
  }
  const t = await objectTypes.createObjectType(ctx, {
    key: DEMO_TYPE_KEY,
    name: 'Site',
    description: 'A place on the map (demo)',
    attributeSchema: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string', minLength: 1 }, height: { type: 'number', minimum: 0 } }
    },
    geometry: { required: true, types: ['Point', 'Polygon'] },
    validationRules: [{ name: 'height-limit', rule: { '<=': [{ var: 'attributes.height' }, 1000] }, message: 'height must be at most 1000' }],
    publicIdTemplate: 'SITE-{{year}}-{{seq:4}}'
  })
  await objectTypes.publishObjectType(ctx, t.id, { to: 'published' })
  await sequencePending(db, DEMO_TENANT)
  return { tenant: DEMO_TENANT, typeId: t.id, created: true }
}
