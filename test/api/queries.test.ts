import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { newTenant, publishedType, token, useOwnerSession } from '../support/harness.js'

describe('query service API', () => {
  const ctx = useOwnerSession({
    tenantPrefix: 'qapi',
    type: { attributeSchema: { type: 'object' }, geometry: { required: false, types: ['Point', 'Polygon', 'LineString'] } }
  })
  let otherType: string
  const id: Record<string, string> = {}

  before(async () => {
    otherType = await publishedType(ctx.owner, { attributeSchema: { type: 'object' } })
    const make = async (key: string, t: string, attributes: Record<string, unknown>, geom?: unknown) => {
      const r = await ctx.owner.post('/v1/objects', { typeId: t, attributes: { key, ...attributes }, ...(geom ? { geometry: geom } : {}) })
      assert.equal(r.status, 201, r.text)
      id[key] = r.body.id
    }
    await make('a', ctx.typeId, { rank: 3, name: 'a,"b"{c}\\' }, { type: 'Point', coordinates: [13.4, 52.5] })
    await make('b', ctx.typeId, { rank: 1, name: "x'); DROP TABLE objects; --" })
    await make('c', otherType, { rank: 2 })
    await ctx.s.db('objects').whereIn('id', [id.a, id.c]).update({ workflow_state: 'approved' })
  })

  const keys = (items: Array<{ attributes: { key: string } }>) => items.map(o => o.attributes.key)

  describe('GET /v1/queries/objects', () => {
    it('filters typeId and status (workflowState), sorts and pages with the envelope', async () => {
      const byType = await ctx.owner.get(`/v1/queries/objects?typeId=${ctx.typeId}`)
      assert.equal(byType.status, 200, byType.text)
      assert.deepEqual(keys(byType.body.items), ['a', 'b'])
      assert.deepEqual(byType.body.pagination, { limit: 100, offset: 0, total: 2, hasMore: false })
      assert.equal(byType.body.items[0].objectId, id.a)
      assert.deepEqual(byType.body.items[0].geometry, { type: 'Point', coordinates: [13.4, 52.5] })
      const same = await ctx.owner.get(`/v1/objects/${id.a}`)
      assert.deepEqual(byType.body.items[0], { ...same.body, objectId: id.a }, 'an item is the object as GET /v1/objects/:id answers it')
      assert.deepEqual(keys((await ctx.owner.get('/v1/queries/objects?status=approved')).body.items), ['a', 'c'])
      assert.deepEqual(keys((await ctx.owner.get(`/v1/queries/objects?status=approved&typeId=${ctx.typeId}`)).body.items), ['a'])
      const sorted = await ctx.owner.get('/v1/queries/objects?sortBy=attributes.rank&sortOrder=desc&limit=2&offset=1')
      assert.deepEqual(keys(sorted.body.items), ['c', 'b'])
      assert.deepEqual(sorted.body.pagination, { limit: 2, offset: 1, total: 3, hasMore: false })
    })

    it('defaults limit to 100', async () => {
      const t = newTenant('qapi-many')
      const c = ctx.s.as(t, ['viewer'])
      const tt = await publishedType(ctx.s.as(t, ['owner']))
      await ctx.s.db.raw(`INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, version, valid_from, created_at, updated_at)
        SELECT gen_random_uuid(), ?, ?, 1, gen_random_uuid()::text, '{}', 1, now(), now(), now() FROM generate_series(1, 105)`, [t, tt])
      const r = await c.get('/v1/queries/objects')
      assert.equal(r.body.items.length, 100)
      assert.deepEqual(r.body.pagination, { limit: 100, offset: 0, total: 105, hasMore: true })
    })

    it('answers 400 on an unknown sortBy, bad limits and unknown parameters', async () => {
      const bad = await ctx.owner.get('/v1/queries/objects?sortBy=geometry')
      assert.equal(bad.status, 400)
      assert.equal(bad.body.error.details.field, 'sortBy')
      assert.equal((await ctx.owner.get('/v1/queries/objects?sortBy=nope')).status, 400)
      for (const q of ['limit=0', 'limit=1001', 'offset=-1', 'offset=1e12', 'typeId=x', 'sortOrder=up', 'color=red', 'status=a%00b']) {
        assert.equal((await ctx.owner.get(`/v1/queries/objects?${q}`)).status, 400, q)
      }
    })
  })

  describe('POST /v1/queries/objects/run', () => {
    it('runs filters, sorts and aggregations and answers {items, pagination, aggregations}', async () => {
      const r = await ctx.owner.post('/v1/queries/objects/run', {
        filters: [{ field: 'attributes.rank', operator: 'gte', value: 2 }],
        sorts: [{ field: 'attributes.rank', order: 'desc' }],
        aggregations: [{ field: '*', function: 'count' }, { field: 'attributes.rank', function: 'max' }]
      })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(keys(r.body.items), ['a', 'c'])
      assert.deepEqual(r.body.aggregations, [{ field: '*', function: 'count', value: 2 }, { field: 'attributes.rank', function: 'max', value: 3 }])
      const all = await ctx.owner.post('/v1/queries/objects/run')
      assert.equal(all.status, 200, all.text)
      assert.equal(all.body.pagination.total, 3)
    })

    it('expands the graph and answers {objects, relations, truncated}', async () => {
      const rel = await ctx.owner.post('/v1/relations', { fromObjectId: id.a, toObjectId: id.c, relationType: 'next' })
      const r = await ctx.owner.post('/v1/queries/objects/run', { filters: [{ field: 'attributes.key', operator: 'eq', value: 'a' }], graph: { relationDirection: 'outgoing' } })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.body.objects.map((o: { id: string }) => o.id).sort(), [id.a, id.c].sort())
      assert.deepEqual(r.body.relations, [{ id: rel.body.id, fromObjectId: id.a, toObjectId: id.c, relationType: 'next', metadata: {} }])
      assert.equal(r.body.truncated, false)
    })

    it('needs objects:read: a viewer may run, a token without roles or narrowed to relations may not', async () => {
      assert.equal((await ctx.s.as(ctx.tenant, ['viewer']).post('/v1/queries/objects/run', {})).status, 200)
      assert.equal((await ctx.s.as(ctx.tenant, []).post('/v1/queries/objects/run', {})).status, 403)
      const narrowed = token({ tenant: ctx.tenant, roles: ['owner'], scope: 'relations:read' })
      assert.equal((await ctx.s.request('POST', '/v1/queries/objects/run', { token: narrowed, body: {} })).status, 403)
      assert.equal((await ctx.s.request('POST', '/v1/queries/objects/run', { body: {} })).status, 401)
    })

    const cases: Array<[string, unknown, string]> = [
      ['a bad nested operator', { filters: [{ operator: 'and', filters: [{ field: 'id', operator: 'eq', value: '00000000-0000-4000-8000-000000000000' }, { field: 'attributes.x', operator: 'like', value: 1 }] }] }, 'filters[0].filters[1].operator'],
      ['an unknown field', { filters: [{ field: 'color', operator: 'eq', value: 1 }] }, 'filters[0].field'],
      ['a missing field', { filters: [{ operator: 'eq', value: 1 }] }, 'filters[0].field'],
      ['an unknown member', { filters: [{ field: 'id', operator: 'exists', extra: 1 }] }, 'filters[0].extra'],
      ['a boolean for greaterThan', { filters: [{ field: 'attributes.x', operator: 'gt', value: true }] }, 'filters[0].value'],
      ['a scalar for in', { filters: [{ field: 'attributes.x', operator: 'in', value: 1 }] }, 'filters[0].value'],
      ['an object in in', { filters: [{ field: 'attributes.x', operator: 'in', value: [1, { a: 1 }] }] }, 'filters[0].value[1]'],
      ['null for equals', { filters: [{ field: 'attributes.x', operator: 'eq', value: null }] }, 'filters[0].value'],
      ['a non-UUID id', { filters: [{ field: 'id', operator: 'eq', value: "1' OR '1'='1" }] }, 'filters[0].value'],
      ['greaterThan on id', { filters: [{ field: 'id', operator: 'gt', value: '00000000-0000-4000-8000-000000000000' }] }, 'filters[0].operator'],
      ['an impossible date', { filters: [{ field: 'createdAt', operator: 'gt', value: '2026-02-30T00:00:00Z' }] }, 'filters[0].value'],
      ['contains on createdAt', { filters: [{ field: 'createdAt', operator: 'contains', value: '2026' }] }, 'filters[0].operator'],
      ['a spatial operator on an attribute', { filters: [{ field: 'attributes.x', operator: 'bbox', value: [0, 0, 1, 1] }] }, 'filters[0].operator'],
      ['equals on geometry', { filters: [{ field: 'geometry', operator: 'eq', value: 1 }] }, 'filters[0].operator'],
      ['an open ring', { filters: [{ field: 'geometry', operator: 'within', value: { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] } }] }, 'filters[0].value.coordinates[0]'],
      ['a latitude out of range', { filters: [{ field: 'geometry', operator: 'intersects', value: { type: 'Point', coordinates: [0, 91] } }] }, 'filters[0].value.coordinates[1]'],
      ['dwithin without distanceMeters', { filters: [{ field: 'geometry', operator: 'dwithin', value: { type: 'Point', coordinates: [0, 0] } }] }, 'filters[0].distanceMeters'],
      ['a negative distance', { filters: [{ field: 'geometry', operator: 'dwithin', value: { type: 'Point', coordinates: [0, 0] }, distanceMeters: -1 }] }, 'filters[0].distanceMeters'],
      ['a bbox of three numbers', { filters: [{ field: 'geometry', operator: 'bbox', value: [0, 0, 1] }] }, 'filters[0].value'],
      ['an inverted bbox', { filters: [{ field: 'geometry', operator: 'bbox', value: [2, 0, 1, 1] }] }, 'filters[0].value'],
      ['an empty or', { filters: [{ operator: 'or', filters: [] }] }, 'filters[0].filters'],
      ['a leaf inside not with a bad value', { filters: [{ operator: 'not', filters: [{ field: 'attributes.x', operator: 'startsWith', value: 5 }] }] }, 'filters[0].filters[0].value'],
      ['a prototype key as operator', { filters: [{ field: 'id', operator: 'constructor', value: 1 }] }, 'filters[0].operator'],
      ['a prototype key as field', { filters: [{ field: 'constructor', operator: 'eq', value: 1 }] }, 'filters[0].field'],
      ['an empty attribute key', { filters: [{ field: 'attributes..x', operator: 'exists' }] }, 'filters[0].field'],
      ['maxDepth above 5', { graph: { maxDepth: 6 } }, 'graph.maxDepth'],
      ['a bad graph direction', { graph: { relationDirection: 'up' } }, 'graph.relationDirection'],
      ['sorting by geometry', { sorts: [{ field: 'geometry' }] }, 'sorts[0].field'],
      ['sum over *', { aggregations: [{ field: '*', function: 'sum' }] }, 'aggregations[0].field'],
      ['avg over createdAt', { aggregations: [{ field: 'createdAt', function: 'avg' }] }, 'aggregations[0].field'],
      ['median', { aggregations: [{ field: '*', function: 'median' }] }, 'aggregations[0].function'],
      ['an unknown top-level member', { filter: [] }, 'filter'],
      ['a limit above 1000', { limit: 1001 }, 'limit'],
      ['an offset beyond bounds', { offset: 1e12 }, 'offset'],
      ['a bad asOf', { asOf: 'yesterday' }, 'asOf']
    ]
    for (const [what, body, field] of cases) {
      it(`answers 400 VALIDATION_ERROR naming ${field} for ${what}`, async () => {
        const r = await ctx.owner.post('/v1/queries/objects/run', body)
        assert.equal(r.status, 400, r.text)
        assert.equal(r.body.error.code, 'VALIDATION_ERROR')
        assert.equal(r.body.error.details.field, field, r.text)
      })
    }
  })

  describe('hostile input', () => {
    const run = (body: unknown) => ctx.owner.post('/v1/queries/objects/run', body)

    it('treats SQL metacharacters in fields and values as data', async () => {
      const field = "attributes.x'); DROP TABLE objects; --"
      const r1 = await run({ filters: [{ field, operator: 'exists' }] })
      assert.equal(r1.status, 200, r1.text)
      assert.equal(r1.body.pagination.total, 0)
      const r2 = await run({ filters: [{ field: 'attributes.name', operator: 'eq', value: "x'); DROP TABLE objects; --" }] })
      assert.deepEqual(keys(r2.body.items), ['b'])
      const r3 = await run({ filters: [{ field: 'attributes.name', operator: 'in', value: ['a,"b"{c}\\', '}', '{', '"', ',', 'NULL'] }] })
      assert.deepEqual(keys(r3.body.items), ['a'])
      const r4 = await run({ filters: [{ field: 'workflowState', operator: 'in', value: ['approved', "') OR TRUE --", 'a,b', '{x}'] }] })
      assert.deepEqual(keys(r4.body.items), ['a', 'c'])
      const r5 = await run({ sorts: [{ field: 'attributes.rank; DROP TABLE objects' }], aggregations: [{ field: 'attributes.$$ OR 1=1 $$', function: 'sum' }] })
      assert.equal(r5.status, 200, r5.text)
      assert.equal((await ctx.owner.get(`/v1/objects/${id.a}`)).status, 200)
    })

    it('refuses NUL characters, unpaired surrogates, non-finite numbers and over-long strings with 400', async () => {
      for (const body of [
        { filters: [{ field: 'attributes.name', operator: 'eq', value: 'a\u0000' }] },
        { filters: [{ field: 'attributes.na\u0000me', operator: 'exists' }] },
        { filters: [{ field: 'attributes.name', operator: 'in', value: ['\ud800'] }] },
        { filters: [{ field: 'attributes.name', operator: 'contains', value: 'x'.repeat(5000) }] },
        { graph: { relationTypes: ['a\u0000'] } }
      ]) {
        const r = await run(body)
        assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`)
      }
      const inf = await ctx.s.request('POST', '/v1/queries/objects/run', { token: ctx.owner.token, raw: '{"filters":[{"field":"attributes.rank","operator":"gt","value":1e400}]}', headers: { 'Content-Type': 'application/json' } })
      assert.equal(inf.status, 400, inf.text)
      assert.equal(inf.body.error.details.field, 'filters[0].value')
    })

    it('refuses deep nesting with 400 naming the level, at 9 levels and at thousands', async () => {
      const nest = (n: number) => {
        let f: unknown = { field: 'attributes.rank', operator: 'exists' }
        for (let i = 0; i < n; i++) f = { operator: 'and', filters: [f] }
        return f
      }
      const nine = await run({ filters: [nest(9)] })
      assert.equal(nine.status, 400)
      assert.equal(nine.body.error.details.field, 'filters[0]' + '.filters[0]'.repeat(8))
      const deep = await ctx.s.request('POST', '/v1/queries/objects/run', {
        token: ctx.owner.token,
        raw: '{"filters":[' + '{"operator":"or","filters":['.repeat(20000) + '{"field":"id","operator":"exists"}' + ']}'.repeat(20000) + ']}',
        headers: { 'Content-Type': 'application/json' }
      })
      assert.equal(deep.status, 400, deep.text.slice(0, 200))
      assert.equal(deep.body.error.code, 'VALIDATION_ERROR')
      assert.equal(deep.body.error.details.field, 'filters[0]' + '.filters[0]'.repeat(8))
    })

    it('bounds array sizes, filter counts and geometry sizes', async () => {
      const values = (n: number) => Array.from({ length: n }, (_, i) => i)
      assert.equal((await run({ filters: [{ field: 'attributes.rank', operator: 'in', value: values(1000) }] })).status, 200)
      const big = await run({ filters: [{ field: 'attributes.rank', operator: 'in', value: values(1001) }] })
      assert.equal(big.status, 400)
      assert.equal(big.body.error.details.field, 'filters[0].value')
      const many = await run({ filters: [{ operator: 'or', filters: Array.from({ length: 501 }, () => ({ field: 'id', operator: 'exists' })) }] })
      assert.equal(many.status, 400)
      const ring = Array.from({ length: 10_001 }, (_, i) => [Math.cos(i / 10_000 * 2 * Math.PI), Math.sin(i / 10_000 * 2 * Math.PI)])
      ring[ring.length - 1] = ring[0]
      const huge = await run({ filters: [{ field: 'geometry', operator: 'within', value: { type: 'Polygon', coordinates: [ring] } }] })
      assert.equal(huge.status, 400)
      assert.equal(huge.body.error.details.field, 'filters[0].value')
      assert.equal((await run([])).status, 400)
      assert.equal((await run({ filters: 'id = 1' })).status, 400)
    })
  })

  it('lists the query paths in /openapi/v1.json', async () => {
    const doc = (await ctx.s.request('GET', '/openapi/v1.json')).body
    assert.ok(doc.paths['/v1/queries/objects'].get)
    assert.ok(doc.paths['/v1/queries/objects/run'].post.requestBody)
    assert.ok(doc.paths['/v1/queries/objects'].get.parameters.some((p: { name: string }) => p.name === 'status'))
  })
})
