import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { newTenant, flushAudit, publishedType, useOwnerSession } from '../support/harness.js'
import { point, errorOf, tenantCounts } from '../fixtures/objects.js'
import { reviewWorkflow } from '../fixtures/workflows.js'
import { failure, gql, ok } from '../support/graphql.js'

// GraphQL against REST's answer for the same data: every operation is compared with the REST
// endpoint that calls the same lib service.

const OBJECT_FIELDS = 'id typeId publicId attributes geometry workflowState version validFrom createdAt updatedAt'
const pick = (o: Record<string, unknown>, keys: string) => Object.fromEntries(keys.split(' ').map(k => [k, o[k]]))

describe('POST /v1/graphql: objects', () => {
  const session = useOwnerSession({ type: true })
  const create = async (attributes: Record<string, unknown> = { name: 'pole', height: 5 }) => {
    const d = await ok(session.owner, `mutation ($input: CreateObjectInput!) { createObject(input: $input) { ${OBJECT_FIELDS} } }`,
      { input: { typeId: session.typeId, attributes, geometry: point() } })
    return d.createObject
  }

  it('createObject returns id and publicId, and REST reads the same object', async () => {
    const o = await create()
    assert.equal(typeof o.publicId, 'string')
    const rest = await session.owner.get(`/v1/objects/${o.id}`)
    assert.equal(rest.status, 200)
    assert.deepEqual(o, pick(rest.body, OBJECT_FIELDS))
  })

  it('objects, objectPage and object answer what GET /v1/objects answers', async () => {
    await create({ name: 'a', height: 1 })
    await create({ name: 'b', height: 2 })
    const rest = await session.owner.get(`/v1/objects?typeId=${session.typeId}&limit=2&sortBy=attributes.height&sortOrder=desc`)
    const d = await ok(session.owner, `query ($t: ID) {
      objects(typeId: $t, limit: 2, sortBy: "attributes.height", sortOrder: desc) { ${OBJECT_FIELDS} }
      objectPage(typeId: $t, limit: 2, sortBy: "attributes.height", sortOrder: desc) { items { id } pagination { limit offset total hasMore } }
    }`, { t: session.typeId })
    assert.deepEqual(d.objects, rest.body.items.map((i: Record<string, unknown>) => pick(i, OBJECT_FIELDS)))
    assert.deepEqual(d.objectPage.pagination, rest.body.pagination)
    assert.deepEqual(d.objectPage.items.map((i: { id: string }) => i.id), rest.body.items.map((i: { id: string }) => i.id))
  })

  it('updateObject with the current version patches; a stale version is VERSION_CONFLICT and changes nothing', async () => {
    const o = await create()
    const d = await ok(session.owner, `mutation ($id: ID!) { updateObject(id: $id, version: 1, input: { attributes: { height: 7 } }) { version attributes } }`, { id: o.id })
    assert.deepEqual(d.updateObject, { version: 2, attributes: { name: 'pole', height: 7 } })
    const before = await tenantCounts(session.s.db, session.tenant)
    const e = await failure(session.owner, `mutation ($id: ID!) { updateObject(id: $id, version: 1, input: { attributes: { height: 8 } }) { version } }`, { id: o.id })
    assert.equal(e.extensions.code, 'VERSION_CONFLICT')
    assert.equal(e.extensions.status, 409)
    assert.equal(e.extensions.details.currentVersion, 2)
    assert.deepEqual(e.path, ['updateObject'])
    assert.deepEqual(await tenantCounts(session.s.db, session.tenant), before)
    // The REST answer for the same stale write carries the same code and details.
    const rest = await session.owner.patch(`/v1/objects/${o.id}`, { attributes: { height: 8 } }, { 'If-Match': '"1"' })
    assert.equal(rest.status, 409)
    assert.deepEqual(errorOf(rest).details, e.extensions.details)
  })

  it('object(asOf) and objectHistory answer what REST answers', async () => {
    const o = await create()
    await ok(session.owner, `mutation ($id: ID!) { updateObject(id: $id, version: 1, input: { attributes: { height: 9 } }) { id } }`, { id: o.id })
    const history = await session.owner.get(`/v1/objects/${o.id}/history`)
    const d = await ok(session.owner, `query ($id: ID!, $at: DateTime) {
      objectHistory(id: $id) { items { version operation validFrom validTo txFrom txTo actor { sub roles } object { ${OBJECT_FIELDS} } geometryRepair } pagination { total } }
      object(id: $id, asOf: $at) { version attributes }
    }`, { id: o.id, at: history.body.items[0].txFrom })
    assert.deepEqual(d.objectHistory.items, history.body.items)
    assert.equal(d.objectHistory.pagination.total, 2)
    assert.deepEqual(d.object, { version: 1, attributes: { name: 'pole', height: 5 } })
  })

  it('a validation error carries VALIDATION_ERROR, status 400 and the field, like REST', async () => {
    const e = await failure(session.owner, 'mutation ($t: ID!) { createObject(input: { typeId: $t, attributes: { height: "tall" } }) { id } }', { t: session.typeId })
    const rest = await session.owner.post('/v1/objects', { typeId: session.typeId, attributes: { height: 'tall' } })
    assert.equal(e.extensions.code, 'VALIDATION_ERROR')
    assert.equal(e.extensions.status, 400)
    assert.equal(e.extensions.details.field, errorOf(rest).details.field)
  })

  it('refuses a __proto__ key in JSON input with BAD_REQUEST, as REST refuses it in a body, and stores nothing', async () => {
    const rest = await session.s.request('POST', '/v1/objects', { token: session.owner.token, raw: `{"typeId":"${session.typeId}","attributes":{"__proto__":{"x":1}},"geometry":${JSON.stringify(point())}}`, headers: { 'Content-Type': 'application/json' } })
    assert.equal(rest.status, 400)
    const before = (await session.owner.get('/v1/objects')).body.pagination.total
    for (const attributes of ['{ __proto__: { x: 1 } }', '{ height: 1, nested: [{ __proto__: 1 }] }']) {
      const r = await gql(session.owner, `mutation ($t: ID!) { createObject(input: { typeId: $t, attributes: ${attributes} }) { id } }`, { t: session.typeId })
      assert.equal(r.status, 400, r.res.text)
      assert.equal(r.errors?.[0].extensions.code, errorOf(rest).code)
      assert.equal(r.errors?.[0].extensions.status, 400)
      assert.match(r.errors?.[0].message ?? '', /prototype/)
    }
    // JSON variables by GET are parsed by Apollo, not by the body parser: refused alike.
    const variables = encodeURIComponent('{"v":{"__proto__":{"x":1}}}')
    const q = encodeURIComponent('query ($v: JSON) { queryObjects(query: { filters: [{ field: "id", operator: "eq", value: $v }] }) { items { id } } }')
    const get = await session.owner.get(`/v1/graphql?query=${q}&variables=${variables}`, { 'apollo-require-preflight': 'true' })
    assert.equal(get.status, 400, get.text)
    assert.equal(get.body.errors[0].extensions.code, errorOf(rest).code)
    assert.equal((await session.owner.get('/v1/objects')).body.pagination.total, before)
  })

  it('deleteObject soft-deletes: object() then answers NOT_FOUND', async () => {
    const o = await create()
    assert.equal((await ok(session.owner, 'mutation ($id: ID!) { deleteObject(id: $id, version: 1) }', { id: o.id })).deleteObject, true)
    const r = await gql(session.owner, 'query ($id: ID!) { object(id: $id) { id } }', { id: o.id })
    assert.equal(r.data.object, null)
    assert.equal(r.errors?.[0].extensions.code, 'NOT_FOUND')
    assert.equal((await session.owner.get(`/v1/objects/${o.id}`)).status, 404)
  })

  it('writes the same audit events as REST', async () => {
    const o = await create()
    await flushAudit(session.s.db, session.tenant)
    const d = await ok(session.owner, 'query ($id: String) { auditEvents(resourceId: $id) { items { id sequence type actor { sub roles } resourceType resourceId data occurredAt previousHash hash } pagination { total } } }', { id: o.id })
    const rest = await session.owner.get(`/v1/audit/events?resourceId=${o.id}`)
    assert.deepEqual(d.auditEvents.items, rest.body.items)
    assert.deepEqual(d.auditEvents.items.map((e: { type: string }) => e.type), ['object.created'])
    const proof = await ok(session.owner, 'query ($id: ID!) { auditProof(id: $id) { eventId sequence hash previousHash valid checks { hashMatches linkMatches chainIntact } headSequence headHash } }', { id: d.auditEvents.items[0].id })
    const restProof = await session.owner.get(`/v1/audit/events/${d.auditEvents.items[0].id}/proof`)
    assert.deepEqual(proof.auditProof, restProof.body)
    assert.equal(proof.auditProof.valid, true)
  })

  it('me answers what GET /v1/auth/me answers', async () => {
    const d = await ok(session.owner, '{ me { sub tenant roles scope permissions authDisabled } release }')
    assert.deepEqual(d.me, (await session.owner.get('/v1/auth/me')).body)
    assert.equal(d.release, session.s.config.release)
  })
})

describe('POST /v1/graphql: object types, workflows and rules', () => {
  const session = useOwnerSession()
  const TYPE_FIELDS = 'id key name description attributeSchema geometry { required types makeValid } validationRules { name rule message } workflowId publicIdTemplate version status publishedVersion createdAt updatedAt'

  it('creates, publishes, lists and validates object types like REST', async () => {
    const created = await ok(session.owner, `mutation { createObjectType(input: { key: "gq_pole", name: "Pole", attributeSchema: { type: "object", properties: { h: { type: "number" } } }, geometry: { required: false, types: ["Point"] } }) { ${TYPE_FIELDS} } }`)
    const id = created.createObjectType.id
    assert.equal(created.createObjectType.status, 'draft')
    const published = await ok(session.owner, `mutation ($id: ID!) { publishObjectType(id: $id) { ${TYPE_FIELDS} } }`, { id })
    const rest = await session.owner.get(`/v1/object-types/${id}`)
    assert.deepEqual(published.publishObjectType, rest.body)
    const d = await ok(session.owner, `query ($id: ID!) {
      objectTypes(key: "gq_pole") { items { id status } pagination { total } }
      objectType(id: $id) { ${TYPE_FIELDS} }
      objectTypeVersions(id: $id) { version status definition createdAt createdBy sandboxAt publishedAt }
      validateObject(typeId: $id, attributes: { h: "x" }) { valid version errors { field reason } }
    }`, { id })
    assert.deepEqual(d.objectType, rest.body)
    assert.deepEqual(d.objectTypes.items, [{ id, status: 'published' }])
    assert.deepEqual(d.objectTypeVersions, (await session.owner.get(`/v1/schema-registry/object-types/${id}`)).body.versions)
    assert.deepEqual(d.validateObject, (await session.owner.post(`/v1/object-types/${id}/validate`, { attributes: { h: 'x' } })).body)
    assert.equal(d.validateObject.valid, false)
    const again = await failure(session.owner, 'mutation ($id: ID!) { publishObjectType(id: $id, to: sandbox) { id } }', { id })
    assert.equal(again.extensions.code, 'INVALID_TRANSITION')
  })

  it('creates workflows, transitions objects and explains transitions like REST', async () => {
    const wf = await ok(session.owner, 'mutation ($input: CreateWorkflowInput!) { createWorkflow(input: $input) { id key name initialState states { name final } transitions { from targetState guards } version createdAt updatedAt } }', { input: reviewWorkflow() })
    const workflowId = wf.createWorkflow.id
    assert.deepEqual(wf.createWorkflow, (await session.owner.get(`/v1/workflows/${workflowId}`)).body)
    const t = await session.owner.post('/v1/object-types', { key: `t_${randomUUID().slice(0, 8)}`, name: 'T', workflowId })
    await session.owner.post(`/v1/object-types/${t.body.id}/publish`, {})
    const operator = session.s.as(session.tenant, ['operator'], 'olga')
    const o = (await operator.post('/v1/objects', { typeId: t.body.id })).body
    const moved = await ok(operator, 'mutation ($id: ID!) { transitionObject(id: $id, targetState: "review", comment: "ready") { workflowState version } }', { id: o.id })
    assert.deepEqual(moved.transitionObject, { workflowState: 'review', version: 2 })
    const q = 'query ($id: ID!) { explainTransitions(objectId: $id) { objectId currentState workflowId workflowVersion availableTransitions { targetState allowed guards { type requiredRole evaluated reason } } } }'
    const explained = await ok(operator, q, { id: o.id })
    assert.deepEqual(explained.explainTransitions, (await operator.get(`/v1/objects/${o.id}/workflow/explain-transitions`)).body)
    const denied = await failure(operator, 'mutation ($id: ID!) { transitionObject(id: $id, targetState: "approved") { id } }', { id: o.id })
    assert.equal(denied.extensions.code, 'GUARD_FAILED')
    assert.equal(denied.extensions.status, 403)
    assert.equal(denied.extensions.details.guards[0].requiredRole, 'admin')
    const invalid = await failure(operator, 'mutation ($id: ID!) { transitionObject(id: $id, targetState: "review") { id } }', { id: o.id })
    assert.equal(invalid.extensions.code, 'INVALID_TRANSITION')
    const list = await ok(session.owner, '{ workflows { items { id } pagination { total } } }')
    assert.deepEqual(list.workflows, { items: [{ id: workflowId }], pagination: { total: 1 } })
  })

  it('creates and publishes rules like REST', async () => {
    const r = await ok(session.owner, 'mutation ($d: JSON!) { createRule(input: { key: "tall", name: "Tall", kind: jsonlogic, definition: $d }) { id status } }', { d: { rule: { '>=': [1, 0] } } })
    const published = await ok(session.owner, 'mutation ($id: ID!) { publishRule(id: $id) { id key name kind definition version status publishedVersion createdAt updatedAt } }', { id: r.createRule.id })
    assert.deepEqual(published.publishRule, (await session.owner.get(`/v1/rules/${r.createRule.id}`)).body)
    const d = await ok(session.owner, 'query ($id: ID!) { rules(status: published) { items { id } } ruleVersions(id: $id) { version status } }', { id: r.createRule.id })
    assert.deepEqual(d.rules.items, [{ id: r.createRule.id }])
    assert.deepEqual(d.ruleVersions, [{ version: 1, status: 'published' }])
  })
})

describe('POST /v1/graphql: relations and the query DSL', () => {
  const session = useOwnerSession({ type: true })
  let a: string, b: string, c: string
  before(async () => {
    const mk = async (height: number, x: number) => (await session.owner.post('/v1/objects', { typeId: session.typeId, attributes: { height }, geometry: point(x, 52.5) })).body.id as string
    a = await mk(1, 13.4); b = await mk(5, 13.41); c = await mk(9, 20)
  })

  it('creates relations and reads them, and an object\'s related objects, like REST', async () => {
    const d = await ok(session.owner, `mutation ($a: ID!, $b: ID!, $c: ID!) {
      ab: createRelation(input: { fromObjectId: $a, toObjectId: $b, relationType: "feeds", metadata: { cable: "A1" } }) { id fromObjectId toObjectId relationType metadata inheritsGeometry deletedAt createdAt updatedAt }
      ac: createRelation(input: { fromObjectId: $a, toObjectId: $c, relationType: "near" }) { id }
    }`, { a, b, c })
    assert.deepEqual(d.ab, (await session.owner.get(`/v1/relations/${d.ab.id}`)).body)
    const q = await ok(session.owner, `query ($a: ID!) {
      relations(metadata: [{ key: "cable", value: "A1" }]) { items { id } pagination { total } }
      object(id: $a) {
        relations(direction: outgoing) { id fromObject { id } toObject { id } }
        relatedObjects(relationType: "feeds") { id }
      }
    }`, { a })
    assert.deepEqual(q.relations, { items: [{ id: d.ab.id }], pagination: { total: 1 } })
    const rest = await session.owner.get(`/v1/objects/${a}/relations?direction=outgoing`)
    assert.deepEqual(q.object.relations.map((r: { id: string }) => r.id), rest.body.items.map((r: { id: string }) => r.id))
    assert.deepEqual(q.object.relations[0].toObject, { id: b })
    assert.deepEqual(q.object.relatedObjects, [{ id: b }])
    const dup = await failure(session.owner, 'mutation ($a: ID!, $b: ID!) { createRelation(input: { fromObjectId: $a, toObjectId: $b, relationType: "feeds" }) { id } }', { a, b })
    assert.equal(dup.extensions.code, 'CONFLICT')
    assert.equal(dup.extensions.status, 409)
    assert.equal(await ok(session.owner, 'mutation ($id: ID!) { deleteRelation(id: $id) }', { id: d.ac.id }).then(x => x.deleteRelation), true)
    const restored = await ok(session.owner, 'mutation ($id: ID!) { restoreRelation(id: $id) { deletedAt } }', { id: d.ac.id })
    assert.equal(restored.restoreRelation.deletedAt, null)
  })

  it('relatedObjects lists an object linked by several relations once, in the order of its first link', async () => {
    const mk = async () => (await session.owner.post('/v1/objects', { typeId: session.typeId, attributes: { height: 2 } })).body.id as string
    const [x, y, z] = [await mk(), await mk(), await mk()]
    const link = async (from: string, to: string, relationType: string) =>
      assert.equal((await session.owner.post('/v1/relations', { fromObjectId: from, toObjectId: to, relationType })).status, 201)
    await link(x, y, 'feeds')
    await link(x, z, 'feeds')
    await link(y, x, 'returns')
    await link(x, y, 'backup')
    const d = await ok(session.owner, `query ($x: ID!) {
      object(id: $x) { all: relatedObjects { id } out: relatedObjects(direction: outgoing) { id } relations { id } }
      objects(limit: 50) { id relatedObjects { id } }
    }`, { x })
    assert.equal(d.object.relations.length, 4)
    assert.deepEqual(d.object.all, [{ id: y }, { id: z }])
    assert.deepEqual(d.object.out, [{ id: y }, { id: z }])
    const listed = d.objects.find((o: { id: string }) => o.id === y)
    assert.deepEqual(listed.relatedObjects, [{ id: x }], 'a batched page answers the same')
  })

  it('queryObjects takes the DSL as input and answers what POST /v1/queries/objects/run answers', async () => {
    const query = {
      filters: [
        { field: 'geometry', operator: 'dwithin', distanceMeters: 5000, value: point(13.405, 52.5) },
        { operator: 'or', filters: [{ field: 'attributes.height', operator: 'gte', value: 5 }, { field: 'attributes.height', operator: 'eq', value: 1 }] }
      ],
      sorts: [{ field: 'attributes.height', order: 'desc' }],
      aggregations: [{ field: '*', function: 'count' }, { field: 'attributes.height', function: 'avg' }]
    }
    const d = await ok(session.owner, `query ($q: ObjectQuery) { queryObjects(query: $q) { items { ${OBJECT_FIELDS} } pagination { limit offset total hasMore } aggregations { field function value } } }`, { q: query })
    const rest = await session.owner.post('/v1/queries/objects/run', query)
    assert.equal(rest.status, 200, rest.text)
    assert.deepEqual(d.queryObjects.items, rest.body.items.map((i: Record<string, unknown>) => pick(i, OBJECT_FIELDS)))
    assert.deepEqual(d.queryObjects.pagination, rest.body.pagination)
    assert.deepEqual(d.queryObjects.aggregations, rest.body.aggregations)
    assert.deepEqual(d.queryObjects.items.map((o: { id: string }) => o.id), [b, a])
    const bad = await failure(session.owner, '{ queryObjects(query: { filters: [{ field: "attributes.height", operator: "almost", value: 1 }] }) { items { id } } }')
    assert.equal(bad.extensions.code, 'VALIDATION_ERROR')
    assert.equal(bad.extensions.details.field, 'filters[0].operator')
  })

  it('objectGraph expands relations like the REST graph query', async () => {
    const graph = { objectIds: [a], maxDepth: 2, relationDirection: 'outgoing' }
    const d = await ok(session.owner, 'query ($g: GraphExpansion!) { objectGraph(graph: $g) { objects { id typeId attributes object { id } } relations { id fromObjectId toObjectId relationType metadata } truncated } }', { g: graph })
    const rest = await session.owner.post('/v1/queries/objects/run', { graph })
    assert.deepEqual(d.objectGraph.objects.map(({ object, ...o }: { object: { id: string } }) => o), rest.body.objects)
    assert.deepEqual(d.objectGraph.relations, rest.body.relations)
    assert.equal(d.objectGraph.truncated, rest.body.truncated)
    for (const o of d.objectGraph.objects) assert.equal(o.object.id, o.id)
  })
})

describe('POST /v1/graphql: tenancy, permissions and authentication', () => {
  const session = useOwnerSession({ type: true })

  it('another tenant sees none of the objects', async () => {
    const o = (await session.owner.post('/v1/objects', { typeId: session.typeId, attributes: {} })).body
    const other = session.s.as(newTenant(), ['owner'])
    const e = await failure(other, 'query ($id: ID!) { object(id: $id) { id } }', { id: o.id })
    assert.equal(e.extensions.code, 'NOT_FOUND')
    assert.deepEqual((await ok(other, '{ objects { id } }')).objects, [])
    const upd = await failure(other, 'mutation ($id: ID!) { updateObject(id: $id, version: 1, input: { attributes: { x: 1 } }) { id } }', { id: o.id })
    assert.equal(upd.extensions.code, 'NOT_FOUND')
    assert.equal((await session.owner.get(`/v1/objects/${o.id}`)).body.version, 1)
  })

  it('a viewer is refused a write with FORBIDDEN (403), nothing is written, and the denial is audited', async () => {
    const viewer = session.s.as(session.tenant, ['viewer'], 'vera')
    const before = await tenantCounts(session.s.db, session.tenant)
    const e = await failure(viewer, 'mutation ($t: ID!) { createObject(input: { typeId: $t }) { id } }', { t: session.typeId })
    assert.equal(e.extensions.code, 'FORBIDDEN')
    assert.equal(e.extensions.status, 403)
    assert.deepEqual(e.extensions.details, { resource: 'objects', action: 'write', required: 'objects:write' })
    const after = await tenantCounts(session.s.db, session.tenant)
    assert.equal(after.objects, before.objects)
    assert.equal(after.audit, before.audit + 1, 'the permission.denied event')
    const denied = await session.s.db('audit_events').where({ tenant_id: session.tenant, type: 'permission.denied' }).count<{ n: number }[]>({ n: '*' })
    assert.equal(Number(denied[0].n), 1)
  })

  it('a viewer without auditLogs:read gets FORBIDDEN on auditEvents but its other fields still resolve', async () => {
    const viewer = session.s.as(session.tenant, ['viewer'], 'vera')
    const r = await gql(viewer, '{ me { roles } auditEvents { items { id } } }')
    assert.deepEqual(r.data.me, { roles: ['viewer'] })
    assert.equal(r.data.auditEvents, null)
    assert.equal(r.errors?.[0].extensions.code, 'FORBIDDEN')
  })

  it('answers 401 with the REST error body without a valid token', async () => {
    const res = await session.s.request('POST', '/v1/graphql', { body: { query: '{ me { sub } }' } })
    assert.equal(res.status, 401)
    assert.equal(errorOf(res).code, 'UNAUTHORIZED')
    const bad = await session.s.request('POST', '/v1/graphql', { body: { query: '{ me { sub } }' }, token: 'not-a-jwt' })
    assert.equal(bad.status, 401)
  })

  it('a body that is not a GraphQL request is a 400 VALIDATION_ERROR naming the field', async () => {
    const res = await session.owner.post('/v1/graphql', { query: '{ me { sub } }', extra: 1 })
    assert.equal(res.status, 400)
    assert.equal(errorOf(res).details.field, 'extra')
  })

  it('a syntax error is BAD_REQUEST and leaks nothing', async () => {
    const r = await gql(session.owner, '{ objects { id ')
    assert.equal(r.status, 400)
    assert.equal(r.errors?.[0].extensions.code, 'BAD_REQUEST')
    assert.equal(r.errors?.[0].extensions.status, 400)
    assert.doesNotMatch(r.res.text, /stacktrace|at .*\.ts:/)
  })

  it('a variable that does not fit its type is BAD_REQUEST naming it (not an internal error)', async () => {
    const q = 'query ($n: Int) { objects(limit: $n) { id } }'
    for (const n of ['x', 99_999_999_999, 1.5]) {
      const r = await gql(session.owner, q, { n })
      assert.equal(r.status, 400, r.res.text)
      assert.equal(r.errors?.[0].extensions.code, 'BAD_REQUEST')
      assert.equal(r.errors?.[0].extensions.status, 400)
      assert.match(r.errors?.[0].message ?? '', /Variable "\$n" got invalid value/)
    }
    await ok(session.owner, q, { n: 2 })
  })
})

describe('POST /v1/graphql: guard rails', () => {
  const session = useOwnerSession({ type: true })
  const ids: string[] = []
  before(async () => {
    for (let i = 0; i < 12; i++) {
      const res = await session.owner.post('/v1/objects', { typeId: session.typeId, attributes: { height: i }, geometry: point(13 + i / 100, 52.5) })
      ids.push(res.body.id)
    }
    for (let i = 0; i + 1 < ids.length; i++) {
      await session.owner.post('/v1/relations', { fromObjectId: ids[i], toObjectId: ids[i + 1], relationType: 'next' })
    }
    // The audit sequencer works on the same pool after each write: let it finish before counting.
    await session.s.sequencer.kick(session.tenant)
  })

  /** SQL statements the server runs while answering one GraphQL request (knex 'query' events on its pool). */
  async function statementsFor (query: string, variables: Record<string, unknown>): Promise<number> {
    let n = 0
    const count = () => { n++ }
    session.s.db.on('query', count)
    try {
      await ok(session.owner, query, variables)
    } finally {
      session.s.db.off('query', count)
    }
    return n
  }

  it('per-item fields are batched: the statement count does not grow with the page size', async () => {
    const q = `query ($t: ID, $n: Int) { objects(typeId: $t, limit: $n) {
      id type { key }
      relations(limit: 5) { id fromObject { id } toObject { publicId } }
      relatedObjects(direction: outgoing, limit: 5) { id type { name } relatedObjects(limit: 5) { id } }
    } }`
    // The bound follows from the query's shape, not from the page: list + count (2), types (1: the
    // second level hits the loader's cache), one relations batch per distinct argument set and
    // level (3), and one objects batch per level of ends (at most 3). Sibling batches may merge
    // when they happen to land in the same tick, so the count can be below the bound; unbatched,
    // 12 objects alone would take more than 12 statements.
    const BOUND = 9
    const small = await statementsFor(q, { t: session.typeId, n: 3 })
    const large = await statementsFor(q, { t: session.typeId, n: 12 })
    assert.ok(small <= BOUND, `${small} statements for 3 objects`)
    assert.ok(large <= BOUND, `${large} statements for 12 objects`)
    const d = await ok(session.owner, q, { t: session.typeId, n: 12 })
    assert.equal(d.objects.length, 12)
    assert.deepEqual(d.objects[0].relatedObjects.map((o: { id: string }) => o.id), [ids[1]])
    assert.deepEqual(d.objects[0].relatedObjects[0].relatedObjects.map((o: { id: string }) => o.id).sort(), [ids[0], ids[2]].sort())
  })

  it('refuses a query deeper than the depth limit with BAD_REQUEST naming the limit', async () => {
    let nested = 'id'
    for (let i = 0; i < 11; i++) nested = `id relatedObjects { ${nested} }`
    const r = await gql(session.owner, `query Deep { objects(limit: 1) { ${nested} } }`)
    assert.equal(r.status, 400)
    assert.equal(r.errors?.[0].extensions.code, 'BAD_REQUEST')
    assert.match(r.errors?.[0].message ?? '', /depth limit of 10/)
    assert.deepEqual(r.errors?.[0].extensions.details, { limit: 'depth', maximum: 10 })
    // Ten levels are fine.
    let ten = 'id'
    for (let i = 0; i < 9; i++) ten = `id relatedObjects(limit: 2) { ${ten} }`
    await ok(session.owner, `{ objects(limit: 1) { ${ten} } }`)
  })

  it('refuses a query above the cost limit with BAD_REQUEST naming the limit, before reading anything', async () => {
    let n = 0
    const count = () => { n++ }
    session.s.db.on('query', count)
    const r = await gql(session.owner, '{ objects(limit: 1000) { id relatedObjects(limit: 1000) { id typeId } } }')
    session.s.db.off('query', count)
    assert.equal(r.status, 400)
    assert.equal(r.errors?.[0].extensions.code, 'BAD_REQUEST')
    assert.match(r.errors?.[0].message ?? '', /cost limit of 50000/)
    assert.equal(r.errors?.[0].extensions.details.limit, 'cost')
    assert.equal(n, 0, 'no SQL ran')
    // The same shape with small pages is fine.
    await ok(session.owner, '{ objects(limit: 10) { id relatedObjects(limit: 10) { id typeId } } }')
  })

  it('refuses fragments that spread each other in a cycle, or an unknown one, as an invalid document (400 BAD_REQUEST, not a 500)', async () => {
    for (const q of [
      '{ objects(limit: 1) { ...A } } fragment A on SpatialObject { id ...B } fragment B on SpatialObject { typeId ...A }',
      '{ objects(limit: 1) { ...A } } fragment A on SpatialObject { id relatedObjects { ...A } }'
    ]) {
      const r = await gql(session.owner, q)
      assert.equal(r.status, 400, r.res.text)
      assert.equal(r.errors?.[0].extensions.code, 'BAD_REQUEST')
      assert.match(r.errors?.[0].message ?? '', /Cannot spread fragment "A" within itself/)
    }
    const unknown = await gql(session.owner, '{ objects(limit: 1) { ...Missing } }')
    assert.equal(unknown.status, 400, unknown.res.text)
    assert.match(unknown.errors?.[0].message ?? '', /Unknown fragment "Missing"/)
  })

  it('measures each fragment once: 40 fragments that each spread the next twice are refused at once, not walked 2^40 times', async () => {
    let doc = '{ objects(limit: 1) { ...F0 } }'
    for (let i = 0; i < 40; i++) doc += ` fragment F${i} on SpatialObject { id ...F${i + 1} ...F${i + 1} }`
    const r = await gql(session.owner, `${doc} fragment F40 on SpatialObject { id }`)
    assert.equal(r.status, 400, r.res.text)
    assert.equal(r.errors?.[0].extensions.code, 'BAD_REQUEST')
    // Nested, the same fragments count their depth once per level.
    let deep = '{ objects(limit: 1) { ...D0 } }'
    for (let i = 0; i < 11; i++) deep += ` fragment D${i} on SpatialObject { id relatedObjects(limit: 1) { ...D${i + 1} ...D${i + 1} } }`
    const d = await gql(session.owner, `${deep} fragment D11 on SpatialObject { id }`)
    assert.equal(d.status, 400, d.res.text)
    assert.deepEqual(d.errors?.[0].extensions.details, { limit: 'depth', maximum: 10 })
  })

  it('costs the same document anew for other variables (the cost cache is keyed by them)', async () => {
    const q = 'query ($n: Int) { objects(limit: $n) { id relatedObjects(limit: $n) { id typeId } } }'
    await ok(session.owner, q, { n: 10 })
    const r = await gql(session.owner, q, { n: 1000 })
    assert.equal(r.status, 400)
    assert.equal(r.errors?.[0].extensions.details.limit, 'cost')
    await ok(session.owner, q, { n: 10 })
  })

  it('takes queries by GET (with the CSRF preflight header) and refuses mutations by GET', async () => {
    const q = encodeURIComponent('{ objects(limit: 1) { id } }')
    const get = await session.owner.get(`/v1/graphql?query=${q}`, { 'apollo-require-preflight': 'true' })
    assert.equal(get.status, 200, get.text)
    assert.equal(get.body.data.objects.length, 1)
    const csrf = await session.owner.get(`/v1/graphql?query=${q}`)
    assert.equal(csrf.status, 400)
    const m = encodeURIComponent(`mutation { deleteObject(id: "${ids[0]}") }`)
    const mutation = await session.owner.get(`/v1/graphql?query=${m}`, { 'apollo-require-preflight': 'true' })
    assert.equal(mutation.status, 405)
    assert.equal((await session.owner.get(`/v1/objects/${ids[0]}`)).status, 200, 'not deleted')
  })

  it('answers introspection', async () => {
    const d = await ok(session.owner, '{ __schema { queryType { name } mutationType { name } } __type(name: "SpatialObject") { fields { name } } }')
    assert.deepEqual(d.__schema, { queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } })
    assert.ok(d.__type.fields.some((f: { name: string }) => f.name === 'relatedObjects'))
    // The full query GraphQL tools send passes the depth and cost limits.
    const { getIntrospectionQuery } = await import('graphql')
    const full = await ok(session.owner, getIntrospectionQuery())
    assert.ok(full.__schema.types.some((t: { name: string }) => t.name === 'ObjectQuery'))
  })
})

describe('POST /v1/graphql: objects(...) with plain columns', () => {
  const session = useOwnerSession({ type: true })
  before(async () => {
    for (let i = 0; i < 4; i++) await session.owner.post('/v1/objects', { typeId: session.typeId, attributes: { name: `n${i}`, height: i }, geometry: i % 2 === 0 ? point(13 + i / 100, 52.5) : undefined })
  })

  it('answers the columns in selection order with aliases and variables; refusals are shaped and audited once', async () => {
    const res = await session.owner.post('/v1/graphql', { query: 'query ($t: ID, $n: Int) { page: objects(typeId: $t, limit: $n, sortBy: "attributes.height", sortOrder: desc) { attributes oid: id geometry typeId version } }', variables: { t: session.typeId, n: 3 } })
    assert.equal(res.status, 200)
    const page = res.body.data.page
    assert.deepEqual(page.map((o: any) => o.attributes.height), [3, 2, 1])
    assert.deepEqual(Object.keys(page[0]), ['attributes', 'oid', 'geometry', 'typeId', 'version'])
    assert.equal(page[0].geometry, null)
    assert.equal(page[1].geometry.type, 'Point')
    const bad = await gql(session.owner, '{ objects(limit: 0) { id } }')
    assert.equal(bad.errors?.[0].extensions.code, 'VALIDATION_ERROR')
    assert.deepEqual(bad.errors?.[0].path, ['objects'])
    const noRole = session.s.as(session.tenant, [])
    const deniedEvents = async () => Number((await session.s.db('audit_events').where({ tenant_id: session.tenant, type: 'permission.denied' }).count<{ n: number }[]>({ n: '*' }))[0].n)
    const before = await deniedEvents()
    const denied = await gql(noRole, '{ objects { id } }')
    assert.equal(denied.status, 200)
    assert.equal(denied.data.objects, null)
    assert.equal(denied.errors?.[0].extensions.code, 'FORBIDDEN')
    assert.equal(await deniedEvents(), before + 1, 'the refusal is audited once')
  })
})

describe('POST /v1/graphql: the REST edge limits apply', () => {
  const session = useOwnerSession({ env: { MAX_BODY_BYTES: '2048', RATE_LIMIT_LIMIT: '3' } })

  it('refuses a body over MAX_BODY_BYTES with 413, then rate-limits with 429', async () => {
    const big = await session.owner.post('/v1/graphql', { query: `{ me { sub } } # ${'x'.repeat(3000)}` })
    assert.equal(big.status, 413)
    assert.equal(errorOf(big).code, 'PAYLOAD_TOO_LARGE')
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await session.owner.post('/v1/graphql', { query: '{ me { sub } }' })).status)
    assert.deepEqual(statuses, [200, 200, 429])
  })
})

describe('GET /graphql/schema.gql', () => {
  const session = useOwnerSession()

  it('is public SDL printed from the running schema, headed by the release', async () => {
    const res = await session.s.request('GET', '/graphql/schema.gql')
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/)
    assert.ok(res.text.startsWith(`# Spatial Object, Workflow and Automation Service: GraphQL schema, release ${session.s.config.release}\n`))
    const { printSchema } = await import('graphql')
    const { graphqlSchema } = await import('../../server/graphql/index.js')
    assert.ok(res.text.endsWith(printSchema(graphqlSchema()) + '\n'))
    // The running endpoint serves exactly these root fields.
    const d = await ok(session.owner, '{ __schema { queryType { fields { name } } } }')
    const printed = [...res.text.matchAll(/^type Query \{([\s\S]*?)^\}/gm)][0][1]
    for (const f of d.__schema.queryType.fields) assert.match(printed, new RegExp(`^\\s+${f.name}[(:]`, 'm'), f.name)
  })
})

describe('POST /v1/graphql: the other writes, against REST', () => {
  const session = useOwnerSession()

  it('updateObjectType and deleteObjectType', async () => {
    const t = (await session.owner.post('/v1/object-types', { key: `u_${randomUUID().slice(0, 8)}`, name: 'Before' })).body
    const d = await ok(session.owner, 'mutation ($id: ID!) { updateObjectType(id: $id, input: { name: "After", publicIdTemplate: "U-{{seq}}" }) { id name publicIdTemplate version status updatedAt } }', { id: t.id })
    const rest = (await session.owner.get(`/v1/object-types/${t.id}`)).body
    assert.deepEqual(d.updateObjectType, pick(rest, 'id name publicIdTemplate version status updatedAt'))
    assert.equal(rest.name, 'After')
    assert.equal((await ok(session.owner, 'mutation ($id: ID!) { deleteObjectType(id: $id) }', { id: t.id })).deleteObjectType, true)
    assert.equal((await session.owner.get(`/v1/object-types/${t.id}`)).status, 404)
  })

  it('updateWorkflow (with and without a stale version) and workflowVersions', async () => {
    const wf = (await session.owner.post('/v1/workflows', reviewWorkflow())).body
    const d = await ok(session.owner, 'mutation ($id: ID!) { updateWorkflow(id: $id, version: 1, input: { name: "Review v2" }) { name version } }', { id: wf.id })
    assert.deepEqual(d.updateWorkflow, { name: 'Review v2', version: 2 })
    const stale = await failure(session.owner, 'mutation ($id: ID!) { updateWorkflow(id: $id, version: 1, input: { name: "v3" }) { version } }', { id: wf.id })
    assert.equal(stale.extensions.code, 'VERSION_CONFLICT')
    const versions = await ok(session.owner, 'query ($id: ID!) { workflowVersions(id: $id) { version status definition createdAt createdBy sandboxAt publishedAt } }', { id: wf.id })
    assert.deepEqual(versions.workflowVersions, (await session.owner.get(`/v1/schema-registry/workflows/${wf.id}`)).body.versions)
  })

  it('updateRule and rule', async () => {
    const r = (await session.owner.post('/v1/rules', { key: `r_${randomUUID().slice(0, 8)}`, name: 'R', kind: 'jsonlogic', definition: { rule: true } })).body
    await ok(session.owner, 'mutation ($id: ID!) { updateRule(id: $id, input: { name: "R2" }) { id } }', { id: r.id })
    const d = await ok(session.owner, 'query ($id: ID!) { rule(id: $id) { id key name kind definition version status publishedVersion createdAt updatedAt } }', { id: r.id })
    assert.deepEqual(d.rule, (await session.owner.get(`/v1/rules/${r.id}`)).body)
    assert.equal(d.rule.name, 'R2')
  })

  it('updateRelation and relation', async () => {
    const typeId = await publishedType(session.owner)
    const a = (await session.owner.post('/v1/objects', { typeId })).body.id
    const b = (await session.owner.post('/v1/objects', { typeId })).body.id
    const rel = (await session.owner.post('/v1/relations', { fromObjectId: a, toObjectId: b, relationType: 'x', metadata: { k: 1, gone: true } })).body
    await ok(session.owner, 'mutation ($id: ID!) { updateRelation(id: $id, input: { metadata: { gone: null, n: 2 }, inheritsGeometry: true }) { id } }', { id: rel.id })
    const d = await ok(session.owner, 'query ($id: ID!) { relation(id: $id) { id fromObjectId toObjectId relationType metadata inheritsGeometry deletedAt createdAt updatedAt } }', { id: rel.id })
    assert.deepEqual(d.relation, (await session.owner.get(`/v1/relations/${rel.id}`)).body)
    assert.deepEqual(d.relation.metadata, { k: 1, n: 2 })
  })
})
