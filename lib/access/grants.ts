// Built-in role grants (docs/behaviour.md "Authentication and roles"). Pure functions, unit-tested.

const design = ['read', 'write', 'publish'] as const

/**
 * Each resource and the actions it has: the one list (the default-grants table of docs/behaviour.md
 * "Authentication and roles" names them), from which RESOURCES and ACTIONS follow and the policy
 * schema's per-resource enums are made. A grant of an action its resource lacks is refused (400),
 * not stored.
 */
export const RESOURCE_ACTIONS = {
  objects: ['read', 'write', 'transition'],
  relations: ['read', 'write'],
  objectTypes: design,
  workflows: design,
  rules: design,
  layers: design,
  automationRules: ['read', 'write', 'publish', 'execute'],
  auditLogs: ['read'],
  policy: ['read', 'write'],
  license: ['read', 'write']
} as const satisfies Record<string, readonly string[]>

export type Resource = keyof typeof RESOURCE_ACTIONS
export const RESOURCES = Object.keys(RESOURCE_ACTIONS) as readonly Resource[]
export type Action = typeof RESOURCE_ACTIONS[Resource][number]
export const ACTIONS: readonly Action[] = [...new Set(Object.values(RESOURCE_ACTIONS).flat())]
export type Permissions = Partial<Record<Resource, Action[]>>
export type RoleGrants = Partial<Record<Resource, Action[]>>

export const BUILT_IN_ROLES = ['owner', 'admin', 'operator', 'viewer'] as const

const viewer: RoleGrants = {
  objects: ['read'], relations: ['read'], objectTypes: ['read'], workflows: ['read'], rules: ['read'], layers: ['read']
}
const operator: RoleGrants = {
  ...viewer,
  objects: ['read', 'write', 'transition'],
  relations: ['read', 'write'],
  automationRules: ['read']
}
const admin: RoleGrants = {
  ...operator,
  objectTypes: [...design], workflows: [...design], rules: [...design], layers: [...design],
  automationRules: ['read', 'write', 'publish', 'execute'],
  auditLogs: ['read'], policy: ['read'], license: ['read']
}
const owner: RoleGrants = { ...admin, policy: ['read', 'write'], license: ['read', 'write'] }

export const DEFAULT_GRANTS: Readonly<Record<string, RoleGrants>> = Object.freeze({
  owner, admin, operator, viewer,
  // A role of its own: licenses and the `_system` audit chain, nothing else.
  system_admin: { license: ['read', 'write'] }
})

/**
 * Effective permissions: the union of each role's grants (a tenant policy may replace a role's
 * grants or define custom roles), then narrowed by `scope` ("resource:action ...") when present.
 */
export function computePermissions (roles: readonly string[], scope: string | null, policy: Record<string, RoleGrants> = {}): Permissions {
  const out: Permissions = {}
  for (const role of roles) {
    const grants = policy[role] ?? DEFAULT_GRANTS[role] ?? {}
    for (const [res, actions] of Object.entries(grants) as Array<[Resource, Action[]]>) {
      const set = new Set(out[res] ?? [])
      for (const a of actions) set.add(a)
      out[res] = [...set]
    }
  }
  if (scope === null) return out
  const allowed = new Set(scope.split(/\s+/).filter(Boolean))
  const narrowed: Permissions = {}
  for (const [res, actions] of Object.entries(out) as Array<[Resource, Action[]]>) {
    const kept = actions.filter(a => allowed.has(`${res}:${a}`) || allowed.has(`${res}:*`))
    if (kept.length > 0) narrowed[res] = kept
  }
  return narrowed
}

const memo = new Map<string, Permissions>()

/**
 * computePermissions memoised by (policy, roles, scope); the result is frozen. `policy` is a
 * tenant policy with a key that changes whenever its grants do (tenant and version); without it
 * the built-in grants apply.
 */
export function permissionsFor (roles: readonly string[], scope: string | null, policy?: { key: string, roles: Record<string, RoleGrants> }): Permissions {
  const key = `${policy?.key ?? ''}|${roles.join('\u0000')}|${scope ?? '\u0000'}`
  let p = memo.get(key)
  if (p === undefined) {
    p = Object.freeze(computePermissions(roles, scope, policy?.roles))
    if (memo.size >= 5000) memo.clear()
    memo.set(key, p)
  }
  return p
}

export function can (permissions: Permissions, resource: Resource, action: Action): boolean {
  return permissions[resource]?.includes(action) ?? false
}
