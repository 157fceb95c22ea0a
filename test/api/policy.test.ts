import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { flushAudit, newTenant, publishedType, startServer, type TestServer } from '../support/harness.js'

async function until (what: string, probe: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!(await probe())) {
    if (Date.now() > end) assert.fail(`timed out waiting until ${what}`)
    await new Promise(resolve => setImmediate(resolve))
  }
}

describe('/v1/permissions/policy', () => {
  let s: TestServer
  let other: TestServer
  before(async () => { s = await startServer(); other = await startServer() })
  after(async () => { await s.close(); await other.close() })

  it('GET shows the built-in defaults at version 0', async () => {
    const res = await s.as(newTenant('pol'), ['owner']).get('/v1/permissions/policy')
    assert.equal(res.status, 200)
    assert.equal(res.body.version, 0)
    assert.equal(res.body.updatedAt, null)
    assert.deepEqual(res.body.roles.viewer.objects, ['read'])
    assert.deepEqual(res.body.roles.owner.policy, ['read', 'write'])
  })

  it('grants a custom role step by step until a call succeeds; /v1/auth/me shows the effective permissions', async () => {
    const tenant = newTenant('pol')
    const owner = s.as(tenant, ['owner'])
    const typeId = await publishedType(owner)
    const inspector = s.as(tenant, ['inspector'], 'ines')
    const denied = await inspector.get('/v1/objects')
    assert.equal(denied.status, 403)
    assert.equal(denied.body.error.details.required, 'objects:read')
    assert.deepEqual((await inspector.get('/v1/auth/me')).body.permissions, {})

    assert.equal((await owner.put('/v1/permissions/policy', { roles: { inspector: { objects: ['read'] } } })).status, 200)
    assert.equal((await inspector.get('/v1/objects')).status, 200)
    const write = await inspector.post('/v1/objects', { typeId, attributes: {} })
    assert.equal(write.status, 403)
    assert.equal(write.body.error.details.required, 'objects:write')

    const put = await owner.put('/v1/permissions/policy', { roles: { inspector: { objects: ['read', 'write'] } } }, { 'If-Match': '"1"' })
    assert.equal(put.status, 200)
    assert.equal(put.body.version, 2)
    assert.equal(put.headers.get('etag'), '"2"')
    assert.equal((await inspector.post('/v1/objects', { typeId, attributes: {} })).status, 201)
    assert.deepEqual((await inspector.get('/v1/auth/me')).body.permissions, { objects: ['read', 'write'] })
  })

  it('narrows a built-in role; a token scope narrows further; roles not named keep their defaults', async () => {
    const tenant = newTenant('pol')
    const owner = s.as(tenant, ['owner'])
    await owner.put('/v1/permissions/policy', { roles: { operator: { objects: ['read'] } } })
    assert.deepEqual((await s.as(tenant, ['operator']).get('/v1/auth/me')).body.permissions, { objects: ['read'] })
    assert.deepEqual((await s.as(tenant, ['viewer']).get('/v1/auth/me')).body.permissions.objects, ['read'])
    const typeId = await publishedType(owner)
    const op = await s.as(tenant, ['operator']).post('/v1/objects', { typeId, attributes: {} })
    assert.equal(op.status, 403)
    assert.equal((await s.as(newTenant('pol'), ['operator']).get('/v1/auth/me')).body.permissions.objects.length, 3, 'another tenant is untouched')
  })

  it('refuses unknown resources and actions, bad role names, and an owner without policy write (400 naming the path)', async () => {
    const owner = s.as(newTenant('pol'), ['owner'])
    const cases: Array<[unknown, string]> = [
      [{ roles: { editor: { widgets: ['read'] } } }, 'roles.editor.widgets'],
      [{ roles: { editor: { objects: ['read', 'fly'] } } }, 'roles.editor.objects[1]'],
      // An action is known per resource (the default-grants table of docs/behaviour.md): objects have no publish.
      [{ roles: { x: { objects: ['publish', 'execute'] } } }, 'roles.x.objects[0]'],
      [{ roles: { x: { relations: ['read', 'transition'] } } }, 'roles.x.relations[1]'],
      [{ roles: { x: { auditLogs: ['write'] } } }, 'roles.x.auditLogs[0]'],
      [{ roles: { x: { policy: ['read', 'publish'] } } }, 'roles.x.policy[1]'],
      [{ roles: { x: { automationRules: ['read', 'transition'] } } }, 'roles.x.automationRules[1]'],
      [{ roles: { owner: { policy: ['read'] } } }, 'roles.owner.policy'],
      [{ roles: { 'bad role': {} } }, 'roles.bad role'],
      [{}, 'roles']
    ]
    for (const [body, field] of cases) {
      const res = await owner.put('/v1/permissions/policy', body)
      assert.equal(res.status, 400, JSON.stringify(body))
      assert.equal(res.body.error.code, 'VALIDATION_ERROR', JSON.stringify(body))
      assert.equal(res.body.error.details.field, field)
    }
    assert.equal((await owner.get('/v1/permissions/policy')).body.version, 0, 'nothing changed')
  })

  it('takes every action a resource has, and documents the actions of each resource in /openapi/v1.json', async () => {
    const owner = s.as(newTenant('pol'), ['owner'])
    const every = {
      objects: ['read', 'write', 'transition'],
      relations: ['read', 'write'],
      objectTypes: ['read', 'write', 'publish'],
      workflows: ['read', 'write', 'publish'],
      rules: ['read', 'write', 'publish'],
      layers: ['read', 'write', 'publish'],
      automationRules: ['read', 'write', 'publish', 'execute'],
      auditLogs: ['read'],
      policy: ['read', 'write'],
      license: ['read', 'write']
    }
    const put = await owner.put('/v1/permissions/policy', { roles: { everything: every } })
    assert.equal(put.status, 200, put.text)
    assert.deepEqual(put.body.roles.everything, every)
    const doc = (await s.request('GET', '/openapi/v1.json')).body
    const grants = doc.paths['/v1/permissions/policy'].put.requestBody.content['application/json'].schema.properties.roles.additionalProperties
    const documented = Object.fromEntries(Object.entries(grants.properties as Record<string, { items: { enum: string[] } }>).map(([r, p]) => [r, p.items.enum]))
    assert.deepEqual(documented, every)
  })

  it('If-Match that is stale gives 409; only policy:write may PUT; each PUT is audited', async () => {
    const tenant = newTenant('pol')
    const owner = s.as(tenant, ['owner'])
    await owner.put('/v1/permissions/policy', { roles: {} })
    const stale = await owner.put('/v1/permissions/policy', { roles: {} }, { 'If-Match': '0' })
    assert.equal(stale.status, 409)
    assert.equal(stale.body.error.details.currentVersion, 1)
    const admin = await s.as(tenant, ['admin']).put('/v1/permissions/policy', { roles: {} })
    assert.equal(admin.status, 403)
    assert.equal(admin.body.error.details.required, 'policy:write')
    await flushAudit(s.db, tenant)
    assert.equal((await owner.get('/v1/audit/events?type=policy.updated')).body.pagination.total, 1)
  })

  it('a change made through one process applies in another at once (no restart)', async () => {
    const tenant = newTenant('pol')
    const elsewhere = other.as(tenant, ['auditor'])
    assert.deepEqual((await elsewhere.get('/v1/auth/me')).body.permissions, {}) // cached there now
    await s.as(tenant, ['owner']).put('/v1/permissions/policy', { roles: { auditor: { auditLogs: ['read'] } } })
    await until('the other process applies the policy', async () => (await elsewhere.get('/v1/auth/me')).body.permissions.auditLogs?.[0] === 'read')
    assert.equal((await elsewhere.get('/v1/audit/events')).status, 200)
  })
})
