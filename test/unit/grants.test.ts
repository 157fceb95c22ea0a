import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ACTIONS, BUILT_IN_ROLES, DEFAULT_GRANTS, RESOURCE_ACTIONS, RESOURCES, can, computePermissions, type Action, type Resource } from '../../lib/access/grants.js'

// docs/behaviour.md "Authentication and roles", the default grants table, written out independently of
// lib/access/grants.ts so a drift in either shows here.
const TABLE: Record<Resource, Record<'viewer' | 'operator' | 'admin' | 'owner', Action[]>> = {
  objects: { viewer: ['read'], operator: ['read', 'write', 'transition'], admin: ['read', 'write', 'transition'], owner: ['read', 'write', 'transition'] },
  relations: { viewer: ['read'], operator: ['read', 'write'], admin: ['read', 'write'], owner: ['read', 'write'] },
  objectTypes: { viewer: ['read'], operator: ['read'], admin: ['read', 'write', 'publish'], owner: ['read', 'write', 'publish'] },
  workflows: { viewer: ['read'], operator: ['read'], admin: ['read', 'write', 'publish'], owner: ['read', 'write', 'publish'] },
  rules: { viewer: ['read'], operator: ['read'], admin: ['read', 'write', 'publish'], owner: ['read', 'write', 'publish'] },
  layers: { viewer: ['read'], operator: ['read'], admin: ['read', 'write', 'publish'], owner: ['read', 'write', 'publish'] },
  automationRules: { viewer: [], operator: ['read'], admin: ['read', 'write', 'publish', 'execute'], owner: ['read', 'write', 'publish', 'execute'] },
  auditLogs: { viewer: [], operator: [], admin: ['read'], owner: ['read'] },
  policy: { viewer: [], operator: [], admin: ['read'], owner: ['read', 'write'] },
  license: { viewer: [], operator: [], admin: ['read'], owner: ['read', 'write'] }
}

const sorted = (a: readonly string[] | undefined) => [...(a ?? [])].sort()

describe('computePermissions', () => {
  for (const role of BUILT_IN_ROLES) {
    it(`grants ${role} exactly the table of docs/behaviour.md`, () => {
      const p = computePermissions([role], null)
      for (const res of RESOURCES) {
        assert.deepEqual(sorted(p[res]), sorted(TABLE[res][role]), `${role} on ${res}`)
      }
      // Nothing outside the table.
      assert.deepEqual(Object.keys(p).filter(r => !(RESOURCES as readonly string[]).includes(r)), [])
    })
  }

  it('makes each built-in role a superset of the next (owner > admin > operator > viewer)', () => {
    const chain = ['viewer', 'operator', 'admin', 'owner']
    for (let i = 1; i < chain.length; i++) {
      const lower = computePermissions([chain[i - 1]], null)
      const upper = computePermissions([chain[i]], null)
      for (const res of RESOURCES) {
        for (const a of lower[res] ?? []) assert.ok(can(upper, res, a), `${chain[i]} lacks ${res}:${a} that ${chain[i - 1]} has`)
      }
    }
  })

  it('gives system_admin licenses only', () => {
    assert.deepEqual(computePermissions(['system_admin'], null), { license: ['read', 'write'] })
  })

  it('gives a custom role nothing until a policy grants it', () => {
    assert.deepEqual(computePermissions(['surveyor'], null), {})
    assert.deepEqual(computePermissions(['surveyor'], null, { surveyor: { relations: ['read'] } }), { relations: ['read'] })
  })

  it('gives a token without roles nothing', () => {
    assert.deepEqual(computePermissions([], null), {})
  })

  it('unions the grants of several roles without duplicates', () => {
    const p = computePermissions(['viewer', 'operator', 'surveyor'], null, { surveyor: { auditLogs: ['read'], objects: ['read'] } })
    assert.deepEqual(sorted(p.objects), ['read', 'transition', 'write'])
    assert.deepEqual(p.auditLogs, ['read'])
    assert.equal(new Set(p.objects).size, p.objects?.length)
  })

  it('lets a tenant policy replace a built-in role', () => {
    const p = computePermissions(['viewer'], null, { viewer: { objects: ['read'] } })
    assert.deepEqual(p, { objects: ['read'] })
  })

  describe('scope', () => {
    it('narrows the role grants to the listed resource:action pairs', () => {
      assert.deepEqual(computePermissions(['owner'], 'objects:read'), { objects: ['read'] })
      assert.deepEqual(computePermissions(['owner'], 'objects:read  relations:write'), { objects: ['read'], relations: ['write'] })
    })

    it('never widens: a scope beyond the roles grants nothing extra', () => {
      assert.deepEqual(computePermissions(['viewer'], 'objects:write policy:write objects:read'), { objects: ['read'] })
    })

    it('accepts resource:* for every action the roles hold on it', () => {
      assert.deepEqual(sorted(computePermissions(['operator'], 'objects:*').objects), ['read', 'transition', 'write'])
    })

    it('an empty scope leaves nothing', () => {
      assert.deepEqual(computePermissions(['owner'], ''), {})
    })
  })
})

describe('RESOURCE_ACTIONS', () => {
  it('gives each resource the actions of its row in the table of docs/behaviour.md (owner holds them all)', () => {
    for (const res of RESOURCES) assert.deepEqual(sorted(RESOURCE_ACTIONS[res]), sorted(TABLE[res].owner), res)
    assert.deepEqual(sorted(Object.keys(RESOURCE_ACTIONS)), sorted(Object.keys(TABLE)))
    assert.deepEqual(sorted(ACTIONS), ['execute', 'publish', 'read', 'transition', 'write'])
  })

  it('holds every built-in grant: no role is granted an action its resource lacks', () => {
    for (const [role, grants] of Object.entries(DEFAULT_GRANTS)) {
      for (const [res, actions] of Object.entries(grants) as Array<[Resource, Action[]]>) {
        for (const a of actions) assert.ok((RESOURCE_ACTIONS[res] as readonly string[]).includes(a), `${role} holds ${res}:${a}`)
      }
    }
  })
})

describe('can', () => {
  it('answers per resource and action', () => {
    const p = computePermissions(['operator'], null)
    assert.equal(can(p, 'objects', 'write'), true)
    assert.equal(can(p, 'objectTypes', 'write'), false)
    assert.equal(can(p, 'auditLogs', 'read'), false)
    for (const a of ACTIONS) assert.equal(can({}, 'objects', a), false)
  })
})
