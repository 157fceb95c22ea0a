import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { startServer, newTenant, publishedType, token, type TestServer, type Client } from '../support/harness.js'
import { reviewWorkflow } from '../fixtures/workflows.js'

describe('POST /v1/objects/:id/workflow/transitions', () => {
  let s: TestServer
  let tenant: string
  let admin: Client
  let operator: Client
  let workflowId: string
  let typeId: string
  const newObject = async () => {
    const res = await operator.post('/v1/objects', { typeId, attributes: { name: 'pipe' } })
    assert.equal(res.status, 201, res.text)
    return res.body as { id: string, version: number, workflowState: string }
  }
  const countRows = async (table: string, where: Record<string, unknown>) =>
    Number((await s.db(table).where(where).count<{ n: number }[]>({ n: '*' }))[0].n)

  before(async () => {
    s = await startServer()
    tenant = newTenant()
    admin = s.as(tenant, ['admin'], 'alice')
    operator = s.as(tenant, ['operator'], 'olga')
    const wf = await admin.post('/v1/workflows', reviewWorkflow())
    assert.equal(wf.status, 201, wf.text)
    workflowId = wf.body.id
    typeId = await publishedType(admin, { workflowId })
  })
  after(() => s.close())

  it('answers 200 with the new state and version, and records history, audit, outbox and the metric', async () => {
    const o = await newObject()
    assert.equal(o.workflowState, 'draft')
    const res = await operator.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'review', comment: 'ready for review' })
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.workflowState, 'review')
    assert.equal(res.body.version, 2)
    assert.equal(res.headers.get('etag'), '"2"')
    assert.deepEqual(res.body.attributes, { name: 'pipe' })

    const history = await operator.get(`/v1/objects/${o.id}/history`)
    assert.deepEqual(history.body.items.map((v: any) => [v.version, v.operation, v.object.workflowState]), [[1, 'created', 'draft'], [2, 'transitioned', 'review']])
    assert.deepEqual(history.body.items[1].actor, { sub: 'olga', roles: ['operator'] })

    const audit = await s.db('audit_events').where({ tenant_id: tenant, type: 'workflow.transitioned', resource_id: o.id })
    assert.equal(audit.length, 1)
    assert.equal(audit[0].data.comment, 'ready for review')
    assert.equal(audit[0].data.fromState, 'draft')
    assert.equal(audit[0].data.toState, 'review')
    assert.equal(audit[0].data.workflowId, workflowId)

    const events = await s.db('outbox_events').where({ tenant_id: tenant, type: 'object.transitioned', aggregate_id: o.id })
    assert.equal(events.length, 1)
    assert.equal(events[0].payload.object.workflowState, 'review')
    assert.equal(events[0].payload.previous.workflowState, 'draft')

    const metrics = (await s.request('GET', '/metrics')).text
    assert.match(metrics, new RegExp(`workflow_transitions_total\\{workflow_id="${workflowId}",state="review"\\} [1-9]`))
  })

  it('answers 409 INVALID_TRANSITION for a move the workflow does not define from the current state', async () => {
    const o = await newObject()
    const res = await admin.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'approved' })
    assert.equal(res.status, 409)
    assert.equal(res.body.error.code, 'INVALID_TRANSITION')
    assert.deepEqual(res.body.error.details.availableTargets, ['review'])
    assert.equal(res.body.error.details.currentState, 'draft')
  })

  it('answers 409 INVALID_TRANSITION when the object type has no workflow', async () => {
    const plain = await publishedType(admin)
    const o = await operator.post('/v1/objects', { typeId: plain })
    assert.equal(o.body.workflowState, null)
    const res = await operator.post(`/v1/objects/${o.body.id}/workflow/transitions`, { targetState: 'review' })
    assert.equal(res.status, 409)
    assert.equal(res.body.error.code, 'INVALID_TRANSITION')
  })

  it('answers 403 GUARD_FAILED with the guard results and leaves nothing behind', async () => {
    const o = await newObject()
    assert.equal((await operator.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'review' })).status, 200)
    const before = {
      versions: await countRows('object_versions', { object_id: o.id }),
      audit: await countRows('audit_events', { tenant_id: tenant, resource_id: o.id }),
      outbox: await countRows('outbox_events', { tenant_id: tenant, aggregate_id: o.id })
    }
    const res = await operator.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'approved', comment: 'please' })
    assert.equal(res.status, 403, res.text)
    assert.equal(res.body.error.code, 'GUARD_FAILED')
    assert.deepEqual(res.body.error.details.guards, [
      { type: 'permission', requiredRole: 'admin', evaluated: false, reason: 'requires role admin; you have operator' }
    ])
    const after = {
      versions: await countRows('object_versions', { object_id: o.id }),
      audit: await countRows('audit_events', { tenant_id: tenant, resource_id: o.id }),
      outbox: await countRows('outbox_events', { tenant_id: tenant, aggregate_id: o.id })
    }
    assert.deepEqual(after, before)
    const now = await operator.get(`/v1/objects/${o.id}`)
    assert.equal(now.body.version, 2)
    assert.equal(now.body.workflowState, 'review')
  })

  it('lets a role above the required one pass a permission guard', async () => {
    const o = await newObject()
    await operator.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'review' })
    const res = await s.as(tenant, ['owner']).post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'approved' })
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.workflowState, 'approved')
  })

  it('answers 409 VERSION_CONFLICT when If-Match is stale, and transitions when it is current', async () => {
    const o = await newObject()
    await operator.patch(`/v1/objects/${o.id}`, { attributes: { name: 'changed' } }, { 'If-Match': '1' })
    const stale = await operator.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'review' }, { 'If-Match': '"1"' })
    assert.equal(stale.status, 409)
    assert.equal(stale.body.error.code, 'VERSION_CONFLICT')
    assert.equal(stale.body.error.details.currentVersion, 2)
    assert.equal(await countRows('object_versions', { object_id: o.id }), 2)
    const ok = await operator.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'review' }, { 'If-Match': 'W/"2"' })
    assert.equal(ok.status, 200, ok.text)
    assert.equal(ok.body.version, 3)
  })

  it('lets exactly one of several concurrent transitions of one object win', async () => {
    const o = await newObject()
    const results = await Promise.all(Array.from({ length: 6 }, () =>
      operator.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'review' })))
    const statuses = results.map(r => r.status).sort()
    assert.deepEqual(statuses, [200, 409, 409, 409, 409, 409])
    for (const r of results.filter(r => r.status === 409)) assert.equal(r.body.error.code, 'INVALID_TRANSITION')
    const versions = await s.db('object_versions').where({ object_id: o.id }).orderBy('version')
    assert.deepEqual(versions.map(v => v.operation), ['created', 'transitioned'])
    assert.equal(await countRows('audit_events', { tenant_id: tenant, resource_id: o.id, type: 'workflow.transitioned' }), 1)
  })

  it('lets exactly one of two concurrent transitions carrying the same If-Match win', async () => {
    const o = await newObject()
    await operator.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'review' })
    const [a, b] = await Promise.all([
      admin.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'approved' }, { 'If-Match': '2' }),
      admin.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'draft' }, { 'If-Match': '2' })
    ])
    assert.deepEqual([a.status, b.status].sort(), [200, 409])
    const loser = a.status === 409 ? a : b
    assert.equal(loser.body.error.code, 'VERSION_CONFLICT')
    assert.equal((await operator.get(`/v1/objects/${o.id}`)).body.version, 3)
  })

  it('answers 403 FORBIDDEN to a viewer (objects:transition) and 404 for an unknown object', async () => {
    const o = await newObject()
    const viewer = await s.as(tenant, ['viewer']).post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'review' })
    assert.equal(viewer.status, 403)
    assert.equal(viewer.body.error.code, 'FORBIDDEN')
    const missing = await operator.post(`/v1/objects/${randomUUID()}/workflow/transitions`, { targetState: 'review' })
    assert.equal(missing.status, 404)
  })

  it('answers 400 for a body without targetState or with unknown fields', async () => {
    const o = await newObject()
    const res = await operator.post(`/v1/objects/${o.id}/workflow/transitions`, { state: 'review' })
    assert.equal(res.status, 400)
    assert.equal(res.body.error.details.field, 'targetState')
  })

  it('follows the latest workflow version at once', async () => {
    const o = await newObject()
    const wf = (await admin.get(`/v1/workflows/${workflowId}`)).body
    const otherType = await publishedType(admin, { workflowId: (await admin.post('/v1/workflows', { ...reviewWorkflow(), transitions: wf.transitions })).body.id })
    const p = await operator.post('/v1/objects', { typeId: otherType })
    const otherWf = (await operator.get(`/v1/object-types/${otherType}`)).body.workflowId
    assert.equal((await admin.patch(`/v1/workflows/${otherWf}`, { transitions: [{ from: ['draft'], targetState: 'approved' }] })).status, 200)
    const moved = await operator.post(`/v1/objects/${p.body.id}/workflow/transitions`, { targetState: 'approved' })
    assert.equal(moved.status, 200, moved.text)
    assert.equal((await operator.post(`/v1/objects/${o.id}/workflow/transitions`, { targetState: 'approved' })).status, 409)
  })
})

describe('GET /v1/objects/:id/workflow/explain-transitions', () => {
  let s: TestServer
  let tenant: string
  let admin: Client
  let typeId: string
  before(async () => {
    s = await startServer()
    tenant = newTenant()
    admin = s.as(tenant, ['admin'])
    const wf = await admin.post('/v1/workflows', reviewWorkflow())
    typeId = await publishedType(admin, { workflowId: wf.body.id })
  })
  after(() => s.close())

  it('lists every transition from the current state with each guard\'s outcome and an actionable reason', async () => {
    const o = await admin.post('/v1/objects', { typeId })
    await admin.post(`/v1/objects/${o.body.id}/workflow/transitions`, { targetState: 'review' })
    const viewer = s.as(tenant, ['viewer'])
    const res = await viewer.get(`/v1/objects/${o.body.id}/workflow/explain-transitions`)
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.objectId, o.body.id)
    assert.equal(res.body.currentState, 'review')
    assert.deepEqual(res.body.availableTransitions, [
      { targetState: 'approved', allowed: false, guards: [{ type: 'permission', requiredRole: 'admin', evaluated: false, reason: 'requires role admin; you have viewer' }] },
      { targetState: 'draft', allowed: false, guards: [] }
    ])
    const asOwner = await s.as(tenant, ['owner']).get(`/v1/objects/${o.body.id}/workflow/explain-transitions`)
    assert.deepEqual(asOwner.body.availableTransitions[0].guards[0], {
      type: 'permission', requiredRole: 'admin', evaluated: true, reason: 'you have role owner, which includes admin'
    })
    assert.equal(asOwner.body.availableTransitions[0].allowed, true)
  })

  it('allows nothing to a caller without objects:transition (a viewer), whatever the guards; an operator may make the unguarded moves', async () => {
    const o = await admin.post('/v1/objects', { typeId })
    await admin.post(`/v1/objects/${o.body.id}/workflow/transitions`, { targetState: 'review' })
    const path = `/v1/objects/${o.body.id}/workflow/explain-transitions`
    const asViewer = await s.as(tenant, ['viewer']).get(path)
    assert.equal(asViewer.status, 200, asViewer.text)
    assert.deepEqual(asViewer.body.availableTransitions.map((t: { targetState: string, allowed: boolean }) => [t.targetState, t.allowed]), [['approved', false], ['draft', false]])
    const refused = await s.as(tenant, ['viewer']).post(`/v1/objects/${o.body.id}/workflow/transitions`, { targetState: 'draft' })
    assert.equal(refused.status, 403, 'explain agrees with the transition')
    assert.equal(refused.body.error.details.required, 'objects:transition')
    const asOperator = await s.as(tenant, ['operator']).get(path)
    assert.deepEqual(asOperator.body.availableTransitions, [
      { targetState: 'approved', allowed: false, guards: [{ type: 'permission', requiredRole: 'admin', evaluated: false, reason: 'requires role admin; you have operator' }] },
      { targetState: 'draft', allowed: true, guards: [] }
    ])
    // A scope without objects:transition narrows the grant away; an admin so scoped passes the guard, still not allowed.
    const scoped = await s.request('GET', path, { token: token({ tenant, roles: ['admin'], sub: 'scoped', scope: 'objects:read' }) })
    assert.equal(scoped.status, 200, scoped.text)
    assert.deepEqual(scoped.body.availableTransitions.map((t: { allowed: boolean, guards: Array<{ evaluated: boolean }> }) => [t.allowed, t.guards.map(g => g.evaluated)]), [[false, [true]], [false, []]])
    const moved = await s.as(tenant, ['operator']).post(`/v1/objects/${o.body.id}/workflow/transitions`, { targetState: 'draft' })
    assert.equal(moved.status, 200, moved.text)
  })

  it('explains nothing to move to from a final state', async () => {
    const o = await admin.post('/v1/objects', { typeId })
    await admin.post(`/v1/objects/${o.body.id}/workflow/transitions`, { targetState: 'review' })
    await admin.post(`/v1/objects/${o.body.id}/workflow/transitions`, { targetState: 'approved' })
    const res = await admin.get(`/v1/objects/${o.body.id}/workflow/explain-transitions`)
    assert.equal(res.body.currentState, 'approved')
    assert.deepEqual(res.body.availableTransitions, [])
  })

  it('answers an empty explanation for an object whose type has no workflow, and 404 for an unknown object', async () => {
    const plain = await publishedType(admin)
    const o = await admin.post('/v1/objects', { typeId: plain })
    const res = await admin.get(`/v1/objects/${o.body.id}/workflow/explain-transitions`)
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { objectId: o.body.id, currentState: null, workflowId: null, workflowVersion: null, availableTransitions: [] })
    assert.equal((await admin.get(`/v1/objects/${randomUUID()}/workflow/explain-transitions`)).status, 404)
  })
})
