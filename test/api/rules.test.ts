import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startServer, newTenant, type TestServer, type Client } from '../support/harness.js'

const square = { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]] }

function logicRule (body: Record<string, unknown> = {}) {
  return { key: `r_${randomUUID().slice(0, 8)}`, name: 'Tall enough', kind: 'jsonlogic', definition: { rule: { '>=': [{ var: 'object.attributes.height' }, 2] }, message: 'height must be at least 2' }, ...body }
}

describe('rules API', () => {
  let s: TestServer
  let tenant: string
  let admin: Client
  before(async () => {
    s = await startServer()
    tenant = newTenant()
    admin = s.as(tenant, ['admin'], 'ada')
  })
  after(() => s.close())

  describe('POST /v1/rules', () => {
    it('creates version 1 as draft with no published version', async () => {
      const res = await admin.post('/v1/rules', logicRule())
      assert.equal(res.status, 201, res.text)
      assert.equal(res.headers.get('location'), `/v1/rules/${res.body.id}`)
      assert.equal(res.body.version, 1)
      assert.equal(res.body.status, 'draft')
      assert.equal(res.body.publishedVersion, null)
      assert.equal(res.body.kind, 'jsonlogic')
      assert.equal(res.body.definition.message, 'height must be at least 2')
    })

    it('creates a spatial rule', async () => {
      const res = await admin.post('/v1/rules', logicRule({ kind: 'spatial', definition: { operator: 'dwithin', geometry: { type: 'Point', coordinates: [0, 0] }, distanceMeters: 500 } }))
      assert.equal(res.status, 201, res.text)
      assert.equal(res.body.definition.distanceMeters, 500)
    })

    const invalid: Array<[string, Record<string, unknown>, string]> = [
      ['a jsonlogic rule without rule', { definition: { message: 'x' } }, 'definition.rule'],
      ['a jsonlogic rule with spatial fields', { definition: { rule: true, operator: 'within' } }, 'definition.operator'],
      ['a spatial rule without a geometry', { kind: 'spatial', definition: { operator: 'within' } }, 'definition.geometry'],
      ['a spatial rule with distanceMeters on within', { kind: 'spatial', definition: { operator: 'within', geometry: square, distanceMeters: 3 } }, 'definition.distanceMeters'],
      ['a spatial rule with a bad coordinate', { kind: 'spatial', definition: { operator: 'within', geometry: { type: 'Point', coordinates: [200, 0] } } }, 'definition.geometry.coordinates[0]'],
      ['an unknown kind', { kind: 'sql' }, 'kind'],
      ['an unknown JsonLogic operator', { definition: { rule: { exec: ['rm'] } } }, 'definition.rule.exec']
    ]
    for (const [what, change, field] of invalid) {
      it(`answers 400 naming ${field} for ${what}`, async () => {
        const res = await admin.post('/v1/rules', logicRule(change))
        assert.equal(res.status, 400, res.text)
        assert.equal(res.body.error.details.field, field)
      })
    }

    it('answers 409 for a duplicate key and 403 to an operator', async () => {
      const body = logicRule()
      assert.equal((await admin.post('/v1/rules', body)).status, 201)
      assert.equal((await admin.post('/v1/rules', body)).status, 409)
      assert.equal((await s.as(tenant, ['operator']).post('/v1/rules', logicRule())).status, 403)
    })
  })

  describe('POST /v1/rules/:id/publish and PATCH /v1/rules/:id', () => {
    it('moves draft -> sandbox -> published, refuses to move back, and versions edits of a published rule', async () => {
      const { body: r } = await admin.post('/v1/rules', logicRule())
      const sandbox = await admin.post(`/v1/rules/${r.id}/publish`, { to: 'sandbox' })
      assert.equal(sandbox.status, 200, sandbox.text)
      assert.equal(sandbox.body.status, 'sandbox')
      assert.equal(sandbox.body.publishedVersion, null)
      const edited = await admin.patch(`/v1/rules/${r.id}`, { name: 'Tall' })
      assert.equal(edited.body.version, 1, 'a sandbox version is edited in place')
      const back = await admin.post(`/v1/rules/${r.id}/publish`, { to: 'sandbox' })
      assert.equal(back.status, 409)
      assert.equal(back.body.error.code, 'INVALID_TRANSITION')
      const pub = await admin.post(`/v1/rules/${r.id}/publish`)
      assert.equal(pub.status, 200, pub.text)
      assert.deepEqual([pub.body.status, pub.body.publishedVersion], ['published', 1])

      const v2 = await admin.patch(`/v1/rules/${r.id}`, { definition: { rule: { '>=': [{ var: 'object.attributes.height' }, 3] } } })
      assert.equal(v2.status, 200, v2.text)
      assert.deepEqual([v2.body.version, v2.body.status, v2.body.publishedVersion, v2.body.name], [2, 'draft', 1, 'Tall'])

      const reg = await admin.get(`/v1/schema-registry/rules/${r.id}`)
      assert.equal(reg.status, 200)
      assert.equal(reg.body.entityType, 'rules')
      assert.deepEqual(reg.body.versions.map((v: any) => [v.version, v.status]), [[1, 'published'], [2, 'draft']])
      assert.equal(reg.body.versions[0].definition.kind, 'jsonlogic')
      assert.deepEqual(reg.body.versions[0].definition.definition.rule, { '>=': [{ var: 'object.attributes.height' }, 2] })
      assert.ok(reg.body.versions[0].sandboxAt !== null && reg.body.versions[0].publishedAt !== null)
      assert.equal(reg.body.versions[0].createdBy, 'ada')

      const audit = await s.db('audit_events').where({ tenant_id: tenant, resource_id: r.id }).orderBy('arrival')
      assert.deepEqual(audit.map(a => a.type), ['rule.created', 'rule.published', 'rule.updated', 'rule.published', 'rule.updated'])
    })

    it('refuses a definition that does not fit the rule\'s kind, and a change of kind', async () => {
      const { body: r } = await admin.post('/v1/rules', logicRule())
      const res = await admin.patch(`/v1/rules/${r.id}`, { definition: { operator: 'within', geometry: square } })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.details.field, 'definition.operator')
      const kind = await admin.patch(`/v1/rules/${r.id}`, { kind: 'spatial' })
      assert.equal(kind.status, 400)
      assert.equal(kind.body.error.details.field, 'kind')
    })

    it('answers 403 to an operator publishing (rules:publish)', async () => {
      const { body: r } = await admin.post('/v1/rules', logicRule())
      const res = await s.as(tenant, ['operator']).post(`/v1/rules/${r.id}/publish`, {})
      assert.equal(res.status, 403)
    })
  })

  describe('GET /v1/rules', () => {
    it('lists and filters the tenant\'s rules and reads one; other tenants see nothing', async () => {
      const c = s.as(newTenant(), ['admin'])
      const a = await c.post('/v1/rules', logicRule())
      await c.post('/v1/rules', logicRule({ kind: 'spatial', definition: { operator: 'intersects', geometry: square } }))
      const all = await c.get('/v1/rules')
      assert.equal(all.body.pagination.total, 2)
      const spatial = await c.get('/v1/rules?kind=spatial')
      assert.deepEqual(spatial.body.items.map((r: any) => r.kind), ['spatial'])
      assert.deepEqual((await c.get(`/v1/rules/${a.body.id}`)).body, a.body)
      assert.equal((await s.as(newTenant(), ['viewer']).get(`/v1/rules/${a.body.id}`)).status, 404)
      assert.equal((await c.get('/v1/rules?limit=0')).status, 400)
    })
  })
})
