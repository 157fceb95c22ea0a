import type { RouteRegistrar } from '../app.js'
import { defineRoute } from '../openapi/registry.js'
import * as automation from '../../lib/automation/index.js'
import { SchemaRegistryBody } from '../../lib/versioning/index.js'
import { parse, parseQuery } from '../../lib/validation.js'
import { Uuid } from '../../lib/schemas.js'
import { idParam, service } from '../http/common.js'

const S = automation.schema
const runParams = { ruleId: { description: 'Rule id (UUID)', schema: Uuid }, runId: { description: 'Run id (UUID)', schema: Uuid } }
const SAFE_KEY = /^[A-Za-z0-9._:-]{1,128}$/

export const registerAutomationRoutes: RouteRegistrar = (router, guards, deps) => {
  defineRoute(router, guards, {
    method: 'get', path: '/v1/automation/rules', operationId: 'listAutomationRules', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'List automation rules (each shown at its latest version)', query: S.ListRulesQuery,
    responses: { 200: { description: 'a page of rules', schema: S.RuleList } }, errors: [400]
  }, async ctx => {
    ctx.body = await automation.listRules(service(ctx), parseQuery(S.ListRulesQuery, ctx.query))
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/automation/rules', operationId: 'createAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'Create a rule (version 1, draft); answers webhookToken / signingSecret once when the rule needs them', body: S.CreateRuleBody,
    responses: { 201: { description: 'created', schema: S.RuleBody } }, errors: [400, 409]
  }, async ctx => {
    const r = await automation.createRule(service(ctx), ctx.request.body)
    ctx.status = 201
    ctx.set('Location', `/v1/automation/rules/${r.id}`)
    ctx.body = r
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/automation/rules/:id', operationId: 'getAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'Read a rule', pathParams: idParam,
    responses: { 200: { description: 'the rule', schema: S.RuleBody } }, errors: [404]
  }, async ctx => {
    ctx.body = await automation.getRule(service(ctx), ctx.params.id)
  })

  defineRoute(router, guards, {
    method: 'patch', path: '/v1/automation/rules/:id', operationId: 'patchAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'Edit a rule: a draft in place; a sandbox or active rule gets a new draft version that goes live on the next publish',
    pathParams: idParam, body: S.PatchRuleBody,
    responses: { 200: { description: 'updated', schema: S.RuleBody } }, errors: [400, 404, 409]
  }, async ctx => {
    ctx.body = await automation.patchRule(service(ctx), ctx.params.id, ctx.request.body)
  })

  defineRoute(router, guards, {
    method: 'delete', path: '/v1/automation/rules/:id', operationId: 'deleteAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'Delete a rule: it stops running, its schedule is removed, its runs stay readable', pathParams: idParam,
    responses: { 204: { description: 'deleted' } }, errors: [404]
  }, async ctx => {
    await automation.deleteRule(service(ctx), ctx.params.id)
    ctx.status = 204
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/automation/rules/:id/publish', operationId: 'publishAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'Make the latest version live: {"to": "sandbox"} records dry runs, {"to": "active"} (default) applies effects',
    pathParams: idParam, body: S.PublishRuleBody, bodyRequired: false,
    responses: { 200: { description: 'published', schema: S.RuleBody } }, errors: [404, 409]
  }, async ctx => {
    ctx.body = await automation.publishRule(service(ctx), ctx.params.id, ctx.request.body)
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/automation/rules/:id/deactivate', operationId: 'deactivateAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'Return a rule to draft (it stops running)', pathParams: idParam,
    responses: { 200: { description: 'deactivated', schema: S.RuleBody } }, errors: [404, 409]
  }, async ctx => {
    ctx.body = await automation.deactivateRule(service(ctx), ctx.params.id)
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/automation/rules/:id/rotate-token', operationId: 'rotateAutomationRuleToken', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'Issue a new webhookToken and signingSecret (shown once); the old ones stop working', pathParams: idParam,
    responses: { 200: { description: 'the new secrets', schema: S.RotateTokenBody } }, errors: [400, 404]
  }, async ctx => {
    ctx.body = await automation.rotateSecrets(service(ctx), ctx.params.id)
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/automation/rules/:id/runs', operationId: 'listAutomationRuns', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'Recent runs of a rule, newest first', pathParams: idParam, query: S.ListRunsQuery,
    responses: { 200: { description: 'a page of runs', schema: S.RunList } }, errors: [400, 404]
  }, async ctx => {
    ctx.body = await automation.listRuns(service(ctx), ctx.params.id, parseQuery(S.ListRunsQuery, ctx.query))
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/automation/rules/:ruleId/runs/:runId', operationId: 'getAutomationRun', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'One run with its input, steps, request (secrets redacted), response and attempt log', pathParams: runParams,
    responses: { 200: { description: 'the run', schema: S.RunDetailBody } }, errors: [404]
  }, async ctx => {
    ctx.body = await automation.getRun(service(ctx), ctx.params.ruleId, ctx.params.runId)
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/automation/rules/:ruleId/runs/:runId/replay', operationId: 'replayAutomationRun', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: 'Replay a failed run: a new run of the live version on the same input, linked by replayOf', pathParams: runParams,
    responses: { 202: { description: 'the new run (queued)', schema: S.RunBody } }, errors: [404, 409]
  }, async ctx => {
    ctx.status = 202
    ctx.body = await automation.replayRun(service(ctx), ctx.params.ruleId, ctx.params.runId)
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/schema-registry/automation-rules/:id', operationId: 'automationRuleSchemaVersions', tag: 'schema-registry', auth: 'bearer', feature: 'automation',
    summary: 'Every version of an automation rule with its status and definition', pathParams: idParam,
    responses: { 200: { description: 'versions', schema: SchemaRegistryBody } }, errors: [404]
  }, async ctx => {
    ctx.body = await automation.ruleRegistry(service(ctx), ctx.params.id)
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/automation/triggers/:slug', operationId: 'triggerAutomationWebhook', tag: 'automation', auth: 'webhook',
    summary: "Incoming webhook: queues a run of the rule with this slug (Authorization: Bearer <the rule's webhookToken>)",
    description: 'Does nothing but record and enqueue: the run executes on the worker. An Idempotency-Key header makes a retried call answer the first call\'s run.',
    pathParams: { slug: { description: 'The webhook trigger slug', schema: { type: 'string', pattern: S.SLUG_PATTERN } } },
    headers: { 'Idempotency-Key': { description: 'Optional: at most 128 of A-Za-z0-9._:-', required: false, schema: { type: 'string' } } },
    body: S.IngressBody,
    responses: { 202: { description: 'accepted', schema: S.IngressAccepted } }, errors: [400, 401, 404]
  }, async ctx => {
    const payload = parse<object>(S.IngressBody, ctx.request.body)
    const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('Authorization'))
    const key = ctx.get('Idempotency-Key')
    ctx.status = 202
    ctx.body = await automation.acceptWebhook({ db: deps.db, jobs: deps.jobs }, ctx.params.slug, m ? m[1] : null, payload, SAFE_KEY.test(key) ? key : null)
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/outbox/flush', operationId: 'flushOutbox', tag: 'automation', auth: 'bearer', feature: 'automation',
    summary: "Deliver the caller's tenant's pending domain events now (automation runs are queued as usual)",
    responses: { 200: { description: 'what was delivered', schema: S.FlushBody } }, errors: [403]
  }, async ctx => {
    ctx.body = await automation.flushOutbox(service(ctx))
  })
}
