import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { newTenant, publishedType, useOwnerSession } from '../support/harness.js'
import { createObject, errorOf, point, square, tenantCounts } from '../fixtures/objects.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('POST /v1/objects', () => {
  const ctx = useOwnerSession({ type: { geometry: { required: false, types: ['Point', 'Polygon'] } } })
  let strictTypeId: string
  before(async () => {
    strictTypeId = await publishedType(ctx.owner, {
      attributeSchema: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'height'],
        properties: { name: { type: 'string', minLength: 2 }, height: { type: 'number', minimum: 0 }, diameter: { type: 'integer' } }
      },
      geometry: { required: true, types: ['Point'] },
      validationRules: [
        { name: 'heightLimit', rule: { '<=': [{ var: 'attributes.height' }, 100] }, message: 'height must be at most 100 m' },
        { name: 'notBerlinCentre', rule: { '!=': [{ var: 'geometry.coordinates.0' }, 13.4] }, message: 'rules see the geometry too' }
      ]
    })
  })

  async function rejected (body: unknown, field: string | RegExp, code = 'VALIDATION_ERROR') {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const res = await ctx.owner.post('/v1/objects', body)
    assert.equal(res.status, 400, res.text)
    const e = errorOf(res)
    assert.equal(e.code, code)
    if (typeof field === 'string') assert.equal(e.details.field, field, res.text)
    else assert.match(e.details.field, field, res.text)
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before, 'a rejected create leaves nothing behind')
    return e
  }

  it('answers 201 with Location, ETag "1" and the object at version 1', async () => {
    const res = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, attributes: { name: 'a', height: 3 }, geometry: point() })
    assert.equal(res.status, 201, res.text)
    const o = res.body
    assert.equal(res.headers.get('etag'), '"1"')
    assert.equal(res.headers.get('location'), `/v1/objects/${o.id}`)
    assert.match(o.id, /^[0-9a-f-]{36}$/)
    assert.equal(o.version, 1)
    assert.equal(o.typeId, ctx.typeId)
    assert.equal(o.publicId, o.id, 'without a template publicId equals id')
    assert.deepEqual(o.attributes, { name: 'a', height: 3 })
    assert.deepEqual(o.geometry, point())
    assert.equal(o.workflowState, null)
    for (const f of ['createdAt', 'updatedAt', 'validFrom']) assert.match(o[f], ISO_MS, f)
    assert.equal(o.createdAt, o.updatedAt)
    assert.equal(o.validFrom, o.createdAt, 'validFrom defaults to the creation time')
  })

  it('reads back what it created, with the ETag of the version', async () => {
    const c = await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'poly' }, geometry: square() })
    const got = await ctx.owner.get(`/v1/objects/${c.body.id}`)
    assert.equal(got.status, 200)
    assert.equal(got.headers.get('etag'), '"1"')
    assert.deepEqual(got.body, c.body)
  })

  it('accepts an object without attributes or geometry when the type allows it', async () => {
    const res = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId })
    assert.equal(res.status, 201, res.text)
    assert.deepEqual(res.body.attributes, {})
    assert.equal(res.body.geometry, null)
  })

  it('takes an explicit validFrom', async () => {
    const res = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, validFrom: '2020-01-01T00:00:00.000Z' })
    assert.equal(res.status, 201, res.text)
    assert.equal(res.body.validFrom, '2020-01-01T00:00:00.000Z')
  })

  it('answers 400 on typeId when the type has no published version (draft or sandbox)', async () => {
    const draft = await ctx.owner.post('/v1/object-types', { key: `draft_${randomUUID().slice(0, 8)}`, name: 'Draft' })
    assert.equal(draft.status, 201)
    await rejected({ typeId: draft.body.id }, 'typeId')
    assert.equal((await ctx.owner.post(`/v1/object-types/${draft.body.id}/publish`, { to: 'sandbox' })).status, 200)
    await rejected({ typeId: draft.body.id }, 'typeId')
  })

  it('answers 400 on typeId for an unknown type and for a value that is not a UUID', async () => {
    await rejected({ typeId: randomUUID() }, 'typeId')
    await rejected({ typeId: 'pipe' }, 'typeId')
    await rejected({ attributes: {} }, 'typeId')
  })

  it('lists every JSON Schema fault in details.errors, each named attributes.<name>', async () => {
    const e = await rejected({ typeId: strictTypeId, attributes: { name: 'x', height: -1, diameter: 1.5, colour: 'red' }, geometry: point(1, 1) }, /^attributes\./)
    const fields = e.details.errors.map((x: { field: string }) => x.field).sort()
    assert.deepEqual(fields, ['attributes.colour', 'attributes.diameter', 'attributes.height', 'attributes.name'])
    for (const x of e.details.errors) assert.equal(typeof x.reason, 'string')
    assert.ok(fields.includes(e.details.field))
    assert.equal(typeof e.details.reason, 'string')
  })

  it('names a missing required attribute', async () => {
    const e = await rejected({ typeId: strictTypeId, attributes: { name: 'xy' }, geometry: point(1, 1) }, 'attributes.height')
    assert.match(e.details.reason, /required/)
  })

  it('returns the message of a failing JsonLogic validation rule', async () => {
    const e = await rejected({ typeId: strictTypeId, attributes: { name: 'xy', height: 150 }, geometry: point(1, 1) }, 'validationRules.heightLimit')
    assert.equal(e.details.reason, 'height must be at most 100 m')
    assert.match(e.message, /height must be at most 100 m/)
    const g = await rejected({ typeId: strictTypeId, attributes: { name: 'xy', height: 5 }, geometry: point(13.4, 1) }, 'validationRules.notBerlinCentre')
    assert.equal(g.details.reason, 'rules see the geometry too')
    const ok = await ctx.owner.post('/v1/objects', { typeId: strictTypeId, attributes: { name: 'xy', height: 100 }, geometry: point(1, 1) })
    assert.equal(ok.status, 201, ok.text)
  })

  it('refuses invalid GeoJSON, naming the offending position', async () => {
    await rejected({ typeId: ctx.typeId, geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] } }, 'geometry.coordinates[0]')
    await rejected({ typeId: ctx.typeId, geometry: point(181, 0) }, 'geometry.coordinates[0]')
    await rejected({ typeId: ctx.typeId, geometry: point(0, -91) }, 'geometry.coordinates[1]')
    await rejected({ typeId: ctx.typeId, geometry: { type: 'Point', coordinates: ['13.4', '52.5'] } }, 'geometry.coordinates[0]')
    await rejected({ typeId: ctx.typeId, geometry: { type: 'Polygon', coordinates: [[0, 0], [1, 0], [1, 1], [0, 0]] } }, 'geometry.coordinates[0][0]')
    await rejected({ typeId: ctx.typeId, geometry: { type: 'Point', coordinates: [1, 2], crs: 'EPSG:4326' } }, 'geometry.crs')
    await rejected({ typeId: ctx.typeId, geometry: { type: 'Feature', geometry: point() } }, 'geometry.type')
    await rejected({ typeId: ctx.typeId, geometry: 'POINT(1 2)' }, 'geometry')
  })

  it('refuses a non-finite coordinate sent as 1e400 (JSON cannot carry NaN)', async () => {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const res = await ctx.s.request('POST', '/v1/objects', { token: ctx.owner.token, raw: `{"typeId":"${ctx.typeId}","geometry":{"type":"Point","coordinates":[1e400,0]}}`, headers: { 'Content-Type': 'application/json' } })
    assert.equal(res.status, 400, res.text)
    assert.equal(errorOf(res).details.field, 'geometry.coordinates[0]')
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
  })

  it('refuses an elevation with 400 instead of failing in the 2D geometry column', async () => {
    await rejected({ typeId: ctx.typeId, geometry: { type: 'Point', coordinates: [1, 2, 30] } }, 'geometry.coordinates')
  })

  it('asks for a 2D position [longitude, latitude] only, never offering an elevation', async () => {
    const elevation = await rejected({ typeId: ctx.typeId, geometry: { type: 'Point', coordinates: [1, 2, 30] } }, 'geometry.coordinates')
    for (const coordinates of [[], [1], [1, 2, 3, 4]]) {
      const e = await rejected({ typeId: ctx.typeId, geometry: { type: 'Point', coordinates } }, 'geometry.coordinates')
      assert.match(e.details.reason, /\[longitude, latitude\]/, JSON.stringify(coordinates))
      assert.doesNotMatch(e.details.reason, /elevation/, `${JSON.stringify(coordinates)}: ${e.details.reason} contradicts "${elevation.details.reason}"`)
    }
  })

  it('refuses a geometry type the object type does not allow', async () => {
    const e = await rejected({ typeId: ctx.typeId, geometry: { type: 'LineString', coordinates: [[0, 0], [1, 1]] } }, 'geometry.type')
    assert.match(e.details.reason, /Point, Polygon/)
  })

  it('refuses a missing geometry when the type requires one', async () => {
    await rejected({ typeId: strictTypeId, attributes: { name: 'xy', height: 1 } }, 'geometry')
    await rejected({ typeId: strictTypeId, attributes: { name: 'xy', height: 1 }, geometry: null }, 'geometry')
  })

  it('refuses workflowState, unknown fields and ill-typed fields in the body', async () => {
    await rejected({ typeId: ctx.typeId, workflowState: 'open' }, 'workflowState')
    await rejected({ typeId: ctx.typeId, id: randomUUID() }, 'id')
    await rejected({ typeId: ctx.typeId, publicId: 'mine' }, 'publicId')
    await rejected({ typeId: ctx.typeId, attributes: [1, 2] }, 'attributes')
    await rejected({ typeId: ctx.typeId, validFrom: 'yesterday' }, 'validFrom')
  })

  it('answers 400 (never 500) to a validFrom the database cannot hold', async () => {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const res = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, validFrom: '0000-01-01T00:00:00Z' })
    assert.equal(res.status, 400, res.text)
    assert.equal(errorOf(res).code, 'VALIDATION_ERROR')
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
  })

  it('refuses attribute values the database cannot store exactly', async () => {
    await rejected({ typeId: ctx.typeId, attributes: { name: 'a\u0000b' } }, 'attributes.name')
    await rejected({ typeId: ctx.typeId, attributes: { name: 'lone \ud800 surrogate' } }, 'attributes.name')
    const res = await ctx.s.request('POST', '/v1/objects', { token: ctx.owner.token, raw: `{"typeId":"${ctx.typeId}","attributes":{"height":1e400}}`, headers: { 'Content-Type': 'application/json' } })
    assert.equal(res.status, 400, res.text)
    assert.equal(errorOf(res).details.field, 'attributes.height')
  })

  it('refuses attributes nested absurdly deep with 400 (never 500)', async () => {
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    for (const depth of [65, 5000, 100_000]) {
      const raw = `{"typeId":"${ctx.typeId}","attributes":{"a":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}}`
      const res = await ctx.s.request('POST', '/v1/objects', { token: ctx.owner.token, raw, headers: { 'Content-Type': 'application/json' } })
      assert.equal(res.status, 400, `${depth}: ${res.text.slice(0, 200)}`)
      assert.match(errorOf(res).details.reason, /deeper than/)
    }
    assert.deepEqual(await tenantCounts(ctx.s.db, ctx.tenant), before)
  })

  it('answers 400 BAD_REQUEST to a malformed JSON body', async () => {
    const res = await ctx.s.request('POST', '/v1/objects', { token: ctx.owner.token, raw: '{"typeId": ', headers: { 'Content-Type': 'application/json' } })
    assert.equal(res.status, 400)
    assert.equal(errorOf(res).code, 'BAD_REQUEST')
  })

  it('answers 403 to a viewer and 201 to an operator', async () => {
    const viewer = ctx.s.as(ctx.tenant, ['viewer'])
    const before = await tenantCounts(ctx.s.db, ctx.tenant)
    const res = await viewer.post('/v1/objects', { typeId: ctx.typeId })
    assert.equal(res.status, 403)
    assert.equal(errorOf(res).code, 'FORBIDDEN')
    assert.equal((await tenantCounts(ctx.s.db, ctx.tenant)).objects, before.objects)
    assert.equal((await ctx.s.as(ctx.tenant, ['operator']).post('/v1/objects', { typeId: ctx.typeId })).status, 201)
  })
})

describe('GET /v1/objects/:id', () => {
  const ctx = useOwnerSession({ type: true })
  let objectId: string
  before(async () => {
    objectId = (await createObject(ctx.owner, { typeId: ctx.typeId, attributes: { name: 'x' } })).body.id
  })

  it('answers 404 NOT_FOUND for an unknown id', async () => {
    const res = await ctx.owner.get(`/v1/objects/${randomUUID()}`)
    assert.equal(res.status, 404)
    assert.equal(errorOf(res).code, 'NOT_FOUND')
  })

  it('answers 404 (never 500) for ids that are not UUIDs', async () => {
    for (const id of ['not-a-uuid', '123', `${randomUUID()}x`, "'; drop table objects; --", '%00']) {
      const res = await ctx.owner.get(`/v1/objects/${encodeURIComponent(id)}`)
      assert.equal(res.status, 404, `${id}: ${res.text}`)
      assert.equal(errorOf(res).code, 'NOT_FOUND')
    }
  })

  it("answers 404 for another tenant's object", async () => {
    const res = await ctx.s.as(newTenant(), ['owner']).get(`/v1/objects/${objectId}`)
    assert.equal(res.status, 404)
  })

  it('answers 400 to a malformed asOf or validAt, and to both at once', async () => {
    assert.equal((await ctx.owner.get(`/v1/objects/${objectId}?asOf=yesterday`)).status, 400)
    assert.equal((await ctx.owner.get(`/v1/objects/${objectId}?validAt=2020-13-01T00:00:00Z`)).status, 400)
    const both = await ctx.owner.get(`/v1/objects/${objectId}?asOf=${new Date().toISOString()}&validAt=${new Date().toISOString()}`)
    assert.equal(both.status, 400)
    assert.equal(errorOf(both).details.field, 'validAt')
    assert.equal((await ctx.owner.get(`/v1/objects/${objectId}?color=red`)).status, 400)
  })

  it('answers 400 (never 500) to an asOf or validAt the database cannot hold', async () => {
    for (const q of ['asOf=0000-01-01T00:00:00Z', 'validAt=0000-01-01T00:00:00Z']) {
      const one = await ctx.owner.get(`/v1/objects/${objectId}?${q}`)
      assert.equal(one.status, 400, `${q}: ${one.text}`)
      assert.equal((await ctx.owner.get(`/v1/objects?${q}`)).status, 400, q)
    }
  })

  it('answers 401 without a token', async () => {
    assert.equal((await ctx.s.request('GET', `/v1/objects/${objectId}`)).status, 401)
  })
})
