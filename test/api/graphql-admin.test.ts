import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { newTenant, publishedType, silentLog, startServer, type Client, type TestServer } from '../support/harness.js'
import { wireModules } from '../../lib/modules.js'
import { inDays, newIssuer } from '../support/license.js'
import { errorOf, point, tenantCounts } from '../fixtures/objects.js'
import * as automation from '../../lib/automation/index.js'
import { failure, gql, ok } from '../support/graphql.js'

// GraphQL for layers, automation, license and the permission policy, each operation against
// REST's answer for the same data; tenancy, denials, version conflicts and license feature switches.

const LAYER = 'id name slug description definition cacheTtlSeconds version createdAt updatedAt'
const RULE = 'id name description status version liveVersion trigger match condition effect createdAt updatedAt'
const RUN = 'id ruleId ruleVersion status trigger matched conditionResult attempts queuedAt startedAt finishedAt durationMs error replayOf'
const LICENSE = 'status edition features limits usage metadata issuedAt expiresAt source deploymentFingerprint'
/** REST omits match/condition when unset; GraphQL answers null. */
const restRule = (r: Record<string, unknown>) => ({ match: null, condition: null, ...r })

describe('POST /v1/graphql: layers, automation, license and policy against REST', () => {
  const issuer = newIssuer()
  let s: TestServer
  let tenant: string
  let owner: Client
  let typeId: string
  before(async () => {
    s = await startServer({ LICENSE_PUBLIC_KEY: issuer.publicKey, LICENSE_KEY: issuer.sign({ exp: inDays(365) }) }, { jobs: true })
    tenant = newTenant('gqa')
    owner = s.as(tenant, ['owner'])
    typeId = await publishedType(owner)
  })
  after(() => s?.close())

  it('layers: create, list, read by slug, update and delete like REST', async () => {
    const created = await ok(owner, `mutation ($t: JSON) { createLayer(input: { name: "Poles", slug: "gq-poles", definition: $t, cacheTtlSeconds: 60 }) { ${LAYER} } }`,
      { t: { filters: { typeId }, fields: ['publicId'] } })
    const id = created.createLayer.id
    assert.deepEqual(created.createLayer, (await owner.get(`/v1/layers/definitions/${id}`)).body)
    const read = await ok(owner, `{ layer(idOrSlug: "gq-poles") { ${LAYER} } layers(limit: 5) { items { id } pagination { limit offset total hasMore } } }`)
    assert.deepEqual(read.layer, created.createLayer)
    const rest = (await owner.get('/v1/layers/definitions?limit=5')).body
    assert.deepEqual(read.layers.items, rest.items.map((l: { id: string }) => ({ id: l.id })))
    assert.deepEqual(read.layers.pagination, rest.pagination)
    const updated = await ok(owner, `mutation { updateLayer(idOrSlug: "gq-poles", input: { description: "all poles", cacheTtlSeconds: 120 }) { ${LAYER} } }`)
    assert.deepEqual(updated.updateLayer, (await owner.get(`/v1/layers/definitions/${id}`)).body)
    assert.equal(updated.updateLayer.cacheTtlSeconds, 120)
    const taken = await ok(owner, 'mutation { createLayer(input: { name: "Other", slug: "gq-other" }) { id } }')
    const conflict = await failure(owner, 'mutation { updateLayer(idOrSlug: "gq-other", input: { slug: "gq-poles" }) { id } }')
    assert.equal(conflict.extensions.code, 'CONFLICT')
    assert.equal((await owner.get(`/v1/layers/definitions/${taken.createLayer.id}`)).body.slug, 'gq-other')
    assert.equal((await ok(owner, 'mutation { deleteLayer(idOrSlug: "gq-other") }')).deleteLayer, true)
    assert.equal((await owner.get('/v1/layers/definitions/gq-other')).status, 404)
    const bad = await failure(owner, 'mutation { createLayer(input: { name: "Bad", slug: "Not A Slug" }) { id } }')
    assert.equal(bad.extensions.code, 'VALIDATION_ERROR')
    assert.equal(bad.extensions.details.field, errorOf(await owner.post('/v1/layers/definitions', { name: 'Bad', slug: 'Not A Slug' })).details.field)
  })

  it('automation: rules, versions, runs, replay, deactivate, rotate, delete and flush like REST', async () => {
    const object = (await owner.post('/v1/objects', { typeId, attributes: { name: 'p' }, geometry: point() })).body
    const created = await ok(owner, `mutation ($i: CreateAutomationRuleInput!) { createAutomationRule(input: $i) { ${RULE} webhookToken } }`, {
      i: { name: 'Inspections', trigger: { type: 'webhook', slug: 'gq-inspections' }, effect: { type: 'object.update', objectId: '{{payload.objectId}}', attributes: { inspected: '{{payload.date}}' } } }
    })
    const rule = created.createAutomationRule
    assert.equal(typeof rule.webhookToken, 'string')
    const { webhookToken, ...shown } = rule
    assert.deepEqual(shown, restRule((await owner.get(`/v1/automation/rules/${rule.id}`)).body))
    const updated = await ok(owner, `mutation ($id: ID!) { updateAutomationRule(id: $id, input: { description: "by crews", condition: { var: "date" } }) { ${RULE} } }`, { id: rule.id })
    assert.deepEqual(updated.updateAutomationRule, restRule((await owner.get(`/v1/automation/rules/${rule.id}`)).body))
    const published = await ok(owner, `mutation ($id: ID!) { publishAutomationRule(id: $id) { ${RULE} } }`, { id: rule.id })
    assert.equal(published.publishAutomationRule.status, 'active')
    const lists = await ok(owner, `query ($id: ID!) { automationRules(status: active) { items { id } pagination { total } } automationRuleVersions(id: $id) { version status definition createdAt createdBy sandboxAt publishedAt } }`, { id: rule.id })
    assert.deepEqual(lists.automationRules, { items: [{ id: rule.id }], pagination: { total: 1 } })
    assert.deepEqual(lists.automationRuleVersions, (await owner.get(`/v1/schema-registry/automation-rules/${rule.id}`)).body.versions)

    // A report on a pole that is gone: the run fails (the test plays the worker).
    await owner.delete(`/v1/objects/${object.id}`)
    const ingress = await s.request('POST', '/v1/automation/triggers/gq-inspections', { token: webhookToken, body: { objectId: object.id, date: '2026-11-20' } })
    assert.equal(ingress.status, 202, ingress.text)
    const runId = ingress.body.runIds[0]
    await automation.executeRun(automation.engineContext({ db: s.db, config: s.config, log: silentLog, jobs: null, sequencer: s.sequencer, hooks: wireModules() }, tenant, randomUUID()), runId, true)
    const runs = await ok(owner, `query ($r: ID!, $run: ID!) {
      automationRuns(ruleId: $r, status: failed) { items { ${RUN} } pagination { limit offset total hasMore } }
      automationRun(ruleId: $r, runId: $run) { ${RUN} input steps request response attemptLog }
    }`, { r: rule.id, run: runId })
    const restRuns = (await owner.get(`/v1/automation/rules/${rule.id}/runs?status=failed`)).body
    assert.deepEqual(runs.automationRuns, { items: restRuns.items, pagination: restRuns.pagination })
    assert.deepEqual(runs.automationRun, (await owner.get(`/v1/automation/rules/${rule.id}/runs/${runId}`)).body)
    assert.equal(runs.automationRun.status, 'failed')
    const replay = await ok(owner, `mutation ($r: ID!, $run: ID!) { replayAutomationRun(ruleId: $r, runId: $run) { ${RUN} } }`, { r: rule.id, run: runId })
    assert.equal(replay.replayAutomationRun.replayOf, runId)
    const replayed = (await owner.get(`/v1/automation/rules/${rule.id}/runs/${replay.replayAutomationRun.id}`)).body
    assert.deepEqual(replay.replayAutomationRun, pick(replayed, RUN))

    const rotated = await ok(owner, 'mutation ($id: ID!) { rotateAutomationRuleToken(id: $id) { id webhookToken signingSecret } }', { id: rule.id })
    assert.notEqual(rotated.rotateAutomationRuleToken.webhookToken, webhookToken)
    const stale = await s.request('POST', '/v1/automation/triggers/gq-inspections', { token: webhookToken, body: { objectId: object.id, date: 'x' } })
    assert.equal(stale.status, 401, 'the old token stopped working')
    const deactivated = await ok(owner, `mutation ($id: ID!) { deactivateAutomationRule(id: $id) { ${RULE} } }`, { id: rule.id })
    assert.deepEqual(deactivated.deactivateAutomationRule, restRule((await owner.get(`/v1/automation/rules/${rule.id}`)).body))
    assert.equal(deactivated.deactivateAutomationRule.status, 'draft')
    const again = await failure(owner, 'mutation ($id: ID!) { deactivateAutomationRule(id: $id) { id } }', { id: rule.id })
    assert.equal(again.extensions.code, 'INVALID_TRANSITION')
    assert.equal(again.extensions.status, 409)
    const flushed = await ok(owner, 'mutation { flushOutbox { delivered failed pending } }')
    assert.deepEqual(Object.keys(flushed.flushOutbox).sort(), ['delivered', 'failed', 'pending'])
    assert.deepEqual((await owner.post('/v1/outbox/flush')).body, { delivered: 0, failed: 0, pending: 0 }, 'GraphQL delivered them all')
    assert.equal((await ok(owner, 'mutation ($id: ID!) { deleteAutomationRule(id: $id) }', { id: rule.id })).deleteAutomationRule, true)
    assert.equal((await owner.get(`/v1/automation/rules/${rule.id}`)).status, 404)
  })

  it('license: GraphQL answers what GET /v1/license answers; installLicense installs like POST /v1/license', async () => {
    const d = await ok(owner, `{ license { ${LICENSE} } }`)
    assert.deepEqual(d.license, (await owner.get('/v1/license')).body)
    const key = issuer.sign({ tenant, exp: inDays(100), edition: 'gq-edition', limits: { object_count: 1000 } })
    const installed = await ok(owner, `mutation ($k: String!) { installLicense(licenseKey: $k) { ${LICENSE} storage warning } }`, { k: key })
    assert.equal(installed.installLicense.edition, 'gq-edition')
    assert.equal(installed.installLicense.source, 'installed')
    const rest = (await owner.get('/v1/license')).body
    const { storage, warning, ...asGet } = installed.installLicense
    assert.deepEqual(asGet, rest)
    assert.equal(storage, 'memory')
    const bad = await failure(owner, 'mutation { installLicense(licenseKey: "not-a-license") { edition } }')
    assert.equal(bad.extensions.code, errorOf(await owner.post('/v1/license', { licenseKey: 'not-a-license' })).code)
    assert.equal((await owner.get('/v1/license')).body.edition, 'gq-edition', 'a bad key changes nothing')
  })

  it('permission policy: read like REST; update with a stale version is VERSION_CONFLICT and changes nothing', async () => {
    const t = newTenant('gqp')
    const o = s.as(t, ['owner'])
    const d = await ok(o, '{ permissionPolicy { roles version updatedAt } }')
    assert.deepEqual(d.permissionPolicy, (await o.get('/v1/permissions/policy')).body)
    const put = await ok(o, 'mutation ($r: JSON!) { updatePermissionPolicy(roles: $r, version: 0) { roles version updatedAt } }', { r: { analyst: { objects: ['read'] } } })
    assert.equal(put.updatePermissionPolicy.version, 1)
    assert.deepEqual(put.updatePermissionPolicy, (await o.get('/v1/permissions/policy')).body)
    assert.deepEqual(put.updatePermissionPolicy.roles.analyst, { objects: ['read'] })
    const stale = await failure(o, 'mutation ($r: JSON!) { updatePermissionPolicy(roles: $r, version: 0) { version } }', { r: { analyst: { layers: ['read'] } } })
    assert.equal(stale.extensions.code, 'VERSION_CONFLICT')
    assert.equal(stale.extensions.details.currentVersion, 1)
    assert.deepEqual((await o.put('/v1/permissions/policy', { roles: {} }, { 'If-Match': '"0"' })).body.error.details, stale.extensions.details)
    assert.deepEqual((await o.get('/v1/permissions/policy')).body.roles.analyst, { objects: ['read'] })
    const analyst = s.as(t, ['analyst'])
    assert.deepEqual((await ok(analyst, '{ me { permissions } }')).me.permissions, { objects: ['read'] })
  })

  it('denies what the role may not do, with FORBIDDEN, writing nothing', async () => {
    const operator = s.as(tenant, ['operator'])
    const viewer = s.as(tenant, ['viewer'])
    const before = await tenantCounts(s.db, tenant)
    const cases: Array<[Client, string, string]> = [
      [operator, 'mutation { createLayer(input: { name: "x", slug: "denied" }) { id } }', 'layers:write'],
      [viewer, '{ automationRules { items { id } } }', 'automationRules:read'],
      [operator, 'mutation { createAutomationRule(input: { name: "x", trigger: { type: "webhook", slug: "denied" }, effect: { type: "webhook", url: "https://example.com" } }) { id } }', 'automationRules:write'],
      [operator, 'mutation { flushOutbox { delivered } }', 'automationRules:execute'],
      [operator, '{ license { status } }', 'license:read'],
      [operator, 'mutation { installLicense(licenseKey: "x") { status } }', 'license:write'],
      [operator, '{ permissionPolicy { version } }', 'policy:read'],
      [s.as(tenant, ['admin']), 'mutation { updatePermissionPolicy(roles: {}) { version } }', 'policy:write']
    ]
    for (const [c, q, required] of cases) {
      const e = await failure(c, q)
      assert.equal(e.extensions.code, 'FORBIDDEN', q)
      assert.equal(e.extensions.status, 403, q)
      assert.equal(e.extensions.details.required, required, q)
    }
    const after = await tenantCounts(s.db, tenant)
    assert.equal(after.objects, before.objects)
    assert.equal((await owner.get('/v1/layers/definitions/denied')).status, 404)
  })

  it('another tenant sees none of the layers and rules and cannot change them', async () => {
    await ok(owner, 'mutation { createLayer(input: { name: "Mine", slug: "gq-mine" }) { id } }')
    const rule = (await owner.post('/v1/automation/rules', { name: 'Mine', trigger: { type: 'webhook', slug: 'gq-mine' }, effect: { type: 'webhook', url: 'https://example.com/x' } })).body
    const other = s.as(newTenant(), ['owner'])
    const d = await gql(other, 'query ($id: ID!) { layer(idOrSlug: "gq-mine") { id } automationRule(id: $id) { id } layers { items { id } } automationRules { items { id } } }', { id: rule.id })
    assert.equal(d.data.layer, null)
    assert.equal(d.data.automationRule, null)
    assert.deepEqual(d.errors?.map(e => e.extensions.code), ['NOT_FOUND', 'NOT_FOUND'])
    assert.deepEqual(d.data.layers.items, [])
    assert.deepEqual(d.data.automationRules.items, [])
    const e = await failure(other, 'mutation ($id: ID!) { publishAutomationRule(id: $id) { id } }', { id: rule.id })
    assert.equal(e.extensions.code, 'NOT_FOUND')
    assert.equal((await owner.get(`/v1/automation/rules/${rule.id}`)).body.status, 'draft')
  })
})

describe('POST /v1/graphql: license feature switches', () => {
  const issuer = newIssuer()
  let s: TestServer
  let owner: Client
  let objectId: string
  let tenant: string
  before(async () => {
    s = await startServer({ LICENSE_PUBLIC_KEY: issuer.publicKey, LICENSE_KEY: issuer.sign({ exp: inDays(365) }) })
    tenant = newTenant('gqf')
    owner = s.as(tenant, ['owner'])
    const typeId = await publishedType(owner)
    objectId = (await owner.post('/v1/objects', { typeId, attributes: {} })).body.id
    const off = { automation: false, relations: false, audit: false, queries: false }
    const res = await owner.post('/v1/license', { licenseKey: issuer.sign({ tenant, exp: inDays(30), features: off }) })
    assert.equal(res.status, 200, res.text)
  })
  after(() => s?.close())

  it('a field of a switched-off module answers FEATURE_DISABLED (403) like its REST route; the other fields still resolve', async () => {
    const cases: Array<[string, string, string]> = [
      ['{ automationRules { items { id } } }', '/v1/automation/rules', 'automation'],
      ['{ relations { items { id } } }', '/v1/relations', 'relations'],
      ['{ auditEvents { items { id } } }', '/v1/audit/events', 'audit'],
      ['{ queryObjects(query: { limit: 1 }) { items { id } } }', '/v1/queries/objects', 'queries']
    ]
    for (const [q, path, feature] of cases) {
      const r = await gql(owner, q)
      assert.equal(r.status, 200, r.res.text)
      assert.equal(r.errors?.[0].extensions.code, 'FEATURE_DISABLED', q)
      assert.equal(r.errors?.[0].extensions.status, 403, q)
      assert.deepEqual(r.errors?.[0].extensions.details, { feature }, q)
      const rest = await owner.get(path)
      assert.equal(rest.status, 403)
      assert.deepEqual(errorOf(rest).details, r.errors?.[0].extensions.details)
    }
    const mixed = await gql(owner, 'query ($id: ID!) { object(id: $id) { id relations { id } } layers { items { id } } }', { id: objectId })
    assert.equal(mixed.data.object, null, 'relations is non-null inside SpatialObject, so the object is nulled')
    assert.deepEqual(mixed.errors?.map(e => [e.path?.join('.'), e.extensions.code]), [['object.relations', 'FEATURE_DISABLED']])
    assert.deepEqual(mixed.data.layers.items, [])
    const plain = await ok(owner, 'query ($id: ID!) { object(id: $id) { id } }', { id: objectId })
    assert.equal(plain.object.id, objectId)
  })

  it('a mutation of a switched-off module writes nothing', async () => {
    const e = await failure(owner, 'mutation { createAutomationRule(input: { name: "x", trigger: { type: "webhook", slug: "off" }, effect: { type: "webhook", url: "https://example.com" } }) { id } }')
    assert.equal(e.extensions.code, 'FEATURE_DISABLED')
    const n = await s.db('automation_rules').where({ tenant_id: tenant }).count<{ n: number }[]>({ n: '*' })
    assert.equal(Number(n[0].n), 0)
  })
})

function pick (o: Record<string, unknown>, keys: string): Record<string, unknown> {
  return Object.fromEntries(keys.split(' ').map(k => [k, o[k]]))
}
