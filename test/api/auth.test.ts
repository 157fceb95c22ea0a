import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import jwt from 'jsonwebtoken'
import { startServer, newTenant, publishedType, token, useOwnerSession, type Response, type TestServer } from '../support/harness.js'
import { TEST_JWT_SECRET } from '../support/env.js'

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
const now = () => Math.floor(Date.now() / 1000)

function assertErrorBody (res: Response, status: number, code: string): void {
  assert.equal(res.status, status, res.text)
  assert.equal(res.body?.error?.code, code, res.text)
  assert.equal(typeof res.body.error.message, 'string')
  assert.ok(res.body.error.message.length > 0)
  assert.equal(typeof res.body.error.details, 'object')
  assert.notEqual(res.body.error.details, null)
  assert.match(res.headers.get('content-type') ?? '', /application\/json/)
}

describe('authentication (SPEC 5, docs/behaviour.md "Authentication and roles")', () => {
  let s: TestServer
  const tenant = newTenant('auth')
  before(async () => { s = await startServer() })
  after(() => s.close())

  const me = (headers: Record<string, string>) => s.request('GET', '/v1/auth/me', { headers })
  const bearer = (t: string) => me({ Authorization: `Bearer ${t}` })

  describe('answers 401 UNAUTHORIZED with the error body', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const cases: Array<[string, () => Promise<Response>]> = [
      ['without an Authorization header', () => me({})],
      ['with a non-Bearer scheme', () => me({ Authorization: `Basic ${Buffer.from('a:b').toString('base64')}` })],
      ['with "Bearer" and no token', () => me({ Authorization: 'Bearer' })],
      ['with two tokens in the header', () => me({ Authorization: `Bearer ${token({ tenant })} extra` })],
      ['with a garbage token', () => bearer('garbage')],
      ['with a bad signature', () => bearer(token({ tenant, roles: ['owner'] }, { secret: 'a-different-secret-of-at-least-32-chars!' }))],
      ['with a tampered payload', () => {
        const [h, , sig] = token({ tenant, roles: ['viewer'] }).split('.')
        return bearer(`${h}.${b64({ sub: 'user-1', tenant, roles: ['owner'] })}.${sig}`)
      }],
      ['with alg none', () => bearer(`${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'user-1', tenant, roles: ['owner'] })}.`)],
      ['with an HS512 token', () => bearer(token({ tenant, roles: ['owner'] }, { algorithm: 'HS512' }))],
      ['with an RS256 token', () => bearer(jwt.sign({ sub: 'user-1', tenant, roles: ['owner'] }, privateKey, { algorithm: 'RS256', expiresIn: '1h' }))],
      ['with an expired token', () => bearer(token({ tenant, roles: ['owner'], exp: now() - 30 }))],
      ['without exp', () => bearer(jwt.sign({ sub: 'user-1', tenant, roles: ['owner'] }, TEST_JWT_SECRET, { algorithm: 'HS256' }))],
      ['with a lifetime beyond AUTH_JWT_MAX_LIFETIME (a day)', () => bearer(token({ tenant, roles: ['owner'] }, { expiresIn: '2d' }))],
      ['without sub', () => bearer(jwt.sign({ tenant, roles: ['owner'] }, TEST_JWT_SECRET, { algorithm: 'HS256', expiresIn: '1h' }))],
      ['without tenant', () => bearer(token({ roles: ['owner'] }))],
      ['with a tenant of bad characters', () => bearer(token({ tenant: 'acme corp/1', roles: ['owner'] }))],
      ['with a tenant longer than 64', () => bearer(token({ tenant: 'a'.repeat(65), roles: ['owner'] }))],
      ['with roles that are not an array', () => bearer(token({ tenant, roles: 'owner' }))],
      ['with roles that are not all strings', () => bearer(token({ tenant, roles: ['owner', 1] }))]
    ]
    for (const [name, send] of cases) {
      it(name, async () => {
        const res = await send()
        assertErrorBody(res, 401, 'UNAUTHORIZED')
        assert.ok(res.headers.get('x-request-id'))
      })
    }

    it('on a protected resource as well as on /v1/auth/me', async () => {
      assertErrorBody(await s.request('GET', '/v1/objects'), 401, 'UNAUTHORIZED')
      assertErrorBody(await s.request('POST', '/v1/objects', { body: {} }), 401, 'UNAUTHORIZED')
    })
  })

  describe('GET /v1/auth/me', () => {
    it('returns {sub, tenant, roles, scope, permissions, authDisabled}', async () => {
      const res = await s.as(tenant, ['operator'], 'alice').get('/v1/auth/me')
      assert.equal(res.status, 200, res.text)
      assert.deepEqual(Object.keys(res.body).sort(), ['authDisabled', 'permissions', 'roles', 'scope', 'sub', 'tenant'])
      assert.equal(res.body.sub, 'alice')
      assert.equal(res.body.tenant, tenant)
      assert.deepEqual(res.body.roles, ['operator'])
      assert.equal(res.body.scope, null)
      assert.equal(res.body.authDisabled, false)
      assert.deepEqual(res.body.permissions.objects.sort(), ['read', 'transition', 'write'])
      assert.deepEqual(res.body.permissions.objectTypes, ['read'])
      assert.equal(res.body.permissions.policy, undefined)
    })

    it('narrows permissions by scope: objects:read on an owner leaves only objects:[read]', async () => {
      const res = await s.request('GET', '/v1/auth/me', { token: token({ tenant, roles: ['owner'], scope: 'objects:read' }) })
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.scope, 'objects:read')
      assert.deepEqual(res.body.roles, ['owner'])
      assert.deepEqual(res.body.permissions, { objects: ['read'] })
    })

    it('answers a token without roles (no role, no permission)', async () => {
      const res = await s.request('GET', '/v1/auth/me', { token: token({ tenant }) })
      assert.equal(res.status, 200, res.text)
      assert.deepEqual(res.body.roles, [])
      assert.deepEqual(res.body.permissions, {})
    })
  })

  it('gives a token without roles 403 FORBIDDEN on /v1/objects', async () => {
    assertErrorBody(await s.request('GET', '/v1/objects', { token: token({ tenant }) }), 403, 'FORBIDDEN')
  })

  it('enforces scope on the API: objects:read can list but not create', async () => {
    const t = newTenant('scope')
    const typeId = await publishedType(s.as(t, ['owner']))
    const scoped = token({ tenant: t, roles: ['owner'], scope: 'objects:read' })
    assert.equal((await s.request('GET', '/v1/objects', { token: scoped })).status, 200)
    assertErrorBody(await s.request('POST', '/v1/objects', { token: scoped, body: { typeId } }), 403, 'FORBIDDEN')
  })
})

describe('issuer and audience (AUTH_JWT_ISSUER, AUTH_JWT_AUDIENCE)', () => {
  let s: TestServer
  const tenant = newTenant('iss')
  before(async () => { s = await startServer({ AUTH_JWT_ISSUER: 'https://idp.test', AUTH_JWT_AUDIENCE: 'spatial-api' }) })
  after(() => s.close())
  const me = (t: string) => s.request('GET', '/v1/auth/me', { token: t })

  it('accepts the configured iss and aud', async () => {
    assert.equal((await me(token({ tenant, roles: ['viewer'] }, { issuer: 'https://idp.test', audience: 'spatial-api' }))).status, 200)
  })
  it('answers 401 for a wrong issuer', async () => {
    assertErrorBody(await me(token({ tenant }, { issuer: 'https://evil.test', audience: 'spatial-api' })), 401, 'UNAUTHORIZED')
  })
  it('answers 401 for a wrong audience', async () => {
    assertErrorBody(await me(token({ tenant }, { issuer: 'https://idp.test', audience: 'another-api' })), 401, 'UNAUTHORIZED')
  })
  it('answers 401 when iss and aud are missing', async () => {
    assertErrorBody(await me(token({ tenant })), 401, 'UNAUTHORIZED')
  })
})

describe('rotating the secret (AUTH_JWT_SECRET_PREVIOUS)', () => {
  const tenant = newTenant('rot')
  const next = 'the-next-secret-of-at-least-32-characters'
  const signed = (secret: string, expiresIn: jwt.SignOptions['expiresIn'] = '1h') => jwt.sign({ sub: 'user-1', tenant, roles: ['viewer'] }, secret, { algorithm: 'HS256', expiresIn })
  const me = (s: TestServer, t: string) => s.request('GET', '/v1/auth/me', { token: t })

  it('accepts tokens of both secrets during the switch, and only the new one after it', async () => {
    const during = await startServer({ AUTH_JWT_SECRET: next, AUTH_JWT_SECRET_PREVIOUS: TEST_JWT_SECRET })
    const afterSwitch = await startServer({ AUTH_JWT_SECRET: next })
    try {
      assert.equal((await me(during, signed(next))).status, 200)
      assert.equal((await me(during, signed(TEST_JWT_SECRET))).status, 200)
      assertErrorBody(await me(during, signed('a-third-secret-nobody-configured-here-xx')), 401, 'UNAUTHORIZED')
      // An expired token of the previous secret is still refused as expired.
      const expired = await me(during, signed(TEST_JWT_SECRET, -10))
      assertErrorBody(expired, 401, 'UNAUTHORIZED')
      assert.match(expired.body.error.message, /expired/)
      assertErrorBody(await me(afterSwitch, signed(TEST_JWT_SECRET)), 401, 'UNAUTHORIZED')
      assert.equal((await me(afterSwitch, signed(next))).status, 200)
    } finally {
      await during.close()
      await afterSwitch.close()
    }
  })
})

describe('AUTH_DISABLED=true', () => {
  it('is the anonymous owner of the default tenant, without any header', async () => {
    const s = await startServer({ AUTH_DISABLED: 'true' })
    try {
      const res = await s.request('GET', '/v1/auth/me')
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.sub, 'anonymous')
      assert.equal(res.body.tenant, 'default')
      assert.deepEqual(res.body.roles, ['owner'])
      assert.equal(res.body.authDisabled, true)
      assert.deepEqual(res.body.permissions.policy?.sort(), ['read', 'write'])
      // A garbage header is ignored, not refused: authentication is skipped entirely.
      assert.equal((await s.request('GET', '/v1/auth/me', { token: 'garbage' })).status, 200)
    } finally {
      await s.close()
    }
  })

  it('uses AUTH_DEFAULT_TENANT when set', async () => {
    const tenant = newTenant('dev')
    const s = await startServer({ AUTH_DISABLED: 'true', AUTH_DEFAULT_TENANT: tenant })
    try {
      const res = await s.request('GET', '/v1/auth/me')
      assert.equal(res.status, 200, res.text)
      assert.deepEqual({ sub: res.body.sub, tenant: res.body.tenant, roles: res.body.roles, authDisabled: res.body.authDisabled },
        { sub: 'anonymous', tenant, roles: ['owner'], authDisabled: true })
      assert.equal((await s.request('GET', '/v1/objects')).status, 200)
    } finally {
      await s.close()
    }
  })
})

describe('built-in roles (SPEC 5.6, the grants of docs/behaviour.md)', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'roles', type: true })

  const typeBody = () => ({ key: `k_${Math.random().toString(36).slice(2, 10)}`, name: 'T', attributeSchema: { type: 'object' } })

  it('viewer lists objects but gets 403 on POST /v1/objects', async () => {
    const viewer = ctx.s.as(ctx.tenant, ['viewer'])
    assert.equal((await viewer.get('/v1/objects')).status, 200)
    assertErrorBody(await viewer.post('/v1/objects', { typeId: ctx.typeId }), 403, 'FORBIDDEN')
  })

  it('operator creates objects but gets 403 on POST /v1/object-types', async () => {
    const operator = ctx.s.as(ctx.tenant, ['operator'])
    const created = await operator.post('/v1/objects', { typeId: ctx.typeId, attributes: { name: 'by operator' } })
    assert.equal(created.status, 201, created.text)
    assertErrorBody(await operator.post('/v1/object-types', typeBody()), 403, 'FORBIDDEN')
  })

  it('admin creates object types', async () => {
    const res = await ctx.s.as(ctx.tenant, ['admin']).post('/v1/object-types', typeBody())
    assert.equal(res.status, 201, res.text)
  })

  it('a custom role has nothing: 403 on reads', async () => {
    const custom = ctx.s.as(ctx.tenant, ['surveyor'])
    assertErrorBody(await custom.get('/v1/objects'), 403, 'FORBIDDEN')
    assertErrorBody(await custom.get('/v1/object-types'), 403, 'FORBIDDEN')
    assert.deepEqual((await custom.get('/v1/auth/me')).body.permissions, {})
  })

  it('a 403 names the missing permission', async () => {
    const res = await ctx.s.as(ctx.tenant, ['viewer']).post('/v1/objects', { typeId: ctx.typeId })
    assert.deepEqual(res.body.error.details, { required: 'objects:write', resource: 'objects', action: 'write' })
  })
})
