import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as automation from '../../lib/automation/index.js'
import { SchemaRegistryBody } from '../../lib/versioning/index.js'
import { parse, parseQuery } from '../../lib/validation.js'
import { bearerToken } from '../middleware/auth.js'
import { Uuid } from '../../lib/schemas.js'
import { idParam } from '../http/common.js'

const S = automation.schema
const SAFE_IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/
const runParams = { ruleId: { description: 'Rule id (UUID)', schema: Uuid }, runId: { description: 'Run id (UUID)', schema: Uuid } }

export const automationRoutes: RouteModule = (deps) => {
  return [
    route({
      method: 'get', path: '/v1/automation/rules', operationId: 'listAutomationRules', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'List automation rules (each shown at its latest version)', query: S.ListRulesQuery,
      description: 'Needs automationRules:read. The pagination envelope over the tenant\'s rules, oldest first; status filters by draft, sandbox or active. Deleted rules are not listed.',
      responses: { 200: { description: 'a page of rules', schema: S.RuleList } }, errors: [400],
      example: { summary: 'Active rules', query: { status: 'active' }, status: 200, after: ['publishAutomationRule'] }
    }, async req => ({ body: await automation.listRules(req.service, parseQuery(S.ListRulesQuery, req.query)) })),

    route({
      method: 'post', path: '/v1/automation/rules', operationId: 'createAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'Create a rule (version 1, draft); answers webhookToken / signingSecret once when the rule needs them', body: S.CreateRuleBody,
      description: 'Needs automationRules:write; counts against automation_rule_count. The trigger, match, condition, effect and templates are checked (400 naming the field; a workflow.transition or object.update effect needs effect.objectId unless the trigger is object.event). A webhook slug already used by another rule of the tenant gives 409 CONFLICT; webhookToken and signingSecret appear in this answer only.',
      responses: { 201: { description: 'created', schema: S.RuleBody } }, errors: [400, 409],
      example: {
        summary: 'Field crews report inspections by webhook; each sets the pole\'s lastInspection',
        body: {
          name: 'Record inspections', description: 'POST {objectId, date} to /v1/automation/triggers/inspections',
          trigger: { type: 'webhook', slug: 'inspections' },
          match: { type: 'attribute', path: '$.date', operator: 'exists' },
          effect: { type: 'object.update', objectId: '{{payload.objectId}}', attributes: { lastInspection: '{{payload.date}}' } }
        },
        status: 201, saves: { automationRuleId: 'id', webhookToken: 'webhookToken' }
      }
    }, async req => {
      const r = await automation.createRule(req.service, req.body)
      return { status: 201, headers: { Location: `/v1/automation/rules/${r.id}` }, body: r }
    }),

    route({
      method: 'get', path: '/v1/automation/rules/:id', operationId: 'getAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'Read a rule', pathParams: idParam,
      description: 'Needs automationRules:read. The rule at its latest version, with status, trigger, match, condition and effect; secrets are never shown. 404 when the rule does not exist or was deleted.',
      responses: { 200: { description: 'the rule', schema: S.RuleBody } }, errors: [404],
      example: { summary: 'The rule', params: { id: '{automationRuleId}' }, status: 200 }
    }, async req => ({ body: await automation.getRule(req.service, req.params.id) })),

    route({
      method: 'patch', path: '/v1/automation/rules/:id', operationId: 'patchAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'Edit a rule: a draft in place; a sandbox or active rule gets a new draft version that goes live on the next publish',
      description: 'Needs automationRules:write. The fields given replace those of the latest version (null clears description, match or condition); trigger and effect are merged one level deep: the fields sent replace those of the same name, null removes one, the others are kept, and a different type replaces the whole trigger or effect. The result is checked like a create (400). A live rule keeps running its live version until the next publish; a slug taken by another rule gives 409 CONFLICT, and a newly needed webhookToken or signingSecret is shown in this answer only.',
      pathParams: idParam, body: S.PatchRuleBody,
      responses: { 200: { description: 'updated', schema: S.RuleBody } }, errors: [400, 404, 409],
      example: { summary: 'Only reports that carry a date (a draft is edited in place)', params: { id: '{automationRuleId}' }, body: { condition: { '!!': [{ var: 'date' }] } }, status: 200 }
    }, async req => ({ body: await automation.patchRule(req.service, req.params.id, req.body) })),

    route({
      method: 'delete', path: '/v1/automation/rules/:id', operationId: 'deleteAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'Delete a rule: it stops running, its schedule is removed, its runs stay readable', pathParams: idParam,
      description: 'Needs automationRules:write; frees one automation_rule_count. The rule stops running at once, its schedule is dropped and its webhook slug and token are released; afterwards the rule reads as 404, while each of its runs stays readable by its id.',
      responses: { 204: { description: 'deleted' } }, errors: [404],
      example: {
        summary: 'Delete a rule',
        params: { id: '{spareAutomationRuleId}' }, status: 204,
        setup: [{ method: 'post', path: '/v1/automation/rules', body: { name: 'Spare', trigger: { type: 'webhook', slug: 'spare' }, effect: { type: 'webhook', url: 'https://example.com/hooks/spare' } }, saves: { spareAutomationRuleId: 'id' } }]
      }
    }, async req => {
      await automation.deleteRule(req.service, req.params.id)
      return { status: 204 }
    }),

    route({
      method: 'post', path: '/v1/automation/rules/:id/publish', operationId: 'publishAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'Make the latest version live: {"to": "sandbox"} records dry runs, {"to": "active"} (default) applies effects',
      description: 'Needs automationRules:publish. sandbox records each run as dry_run without applying the effect; active applies it. Publishing moves forward only (draft -> sandbox -> active) or makes a newer version live: anything else gives 409 INVALID_TRANSITION.',
      pathParams: idParam, body: S.PublishRuleBody, bodyRequired: false,
      responses: { 200: { description: 'published', schema: S.RuleBody } }, errors: [404, 409],
      example: { summary: 'Make it live', params: { id: '{automationRuleId}' }, body: { to: 'active' }, status: 200, after: ['patchAutomationRule'] }
    }, async req => ({ body: await automation.publishRule(req.service, req.params.id, req.body) })),

    route({
      method: 'post', path: '/v1/automation/rules/:id/deactivate', operationId: 'deactivateAutomationRule', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'Return a rule to draft (it stops running)', pathParams: idParam,
      description: 'Needs automationRules:publish. The rule becomes a draft again: it no longer runs, its webhook slug stops accepting calls (404) and its schedule is dropped. A rule that is already a draft gives 409 INVALID_TRANSITION.',
      responses: { 200: { description: 'deactivated', schema: S.RuleBody } }, errors: [404, 409],
      example: { summary: 'Stop it (back to draft)', params: { id: '{automationRuleId}' }, status: 200, after: ['replayAutomationRun', 'listAutomationRules', 'getAutomationRun', 'listAutomationRuns'] }
    }, async req => ({ body: await automation.deactivateRule(req.service, req.params.id) })),

    route({
      method: 'post', path: '/v1/automation/rules/:id/rotate-token', operationId: 'rotateAutomationRuleToken', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'Issue a new webhookToken and signingSecret (shown once); the old ones stop working', pathParams: idParam,
      description: 'Needs automationRules:write. Answers {id, webhookToken?, signingSecret?}: a new token when the rule has a webhook trigger, a new signing secret when it has a webhook effect, each shown only here. A rule with neither gives 400.',
      responses: { 200: { description: 'the new secrets', schema: S.RotateTokenBody } }, errors: [400, 404],
      example: { summary: 'A new webhook token', params: { id: '{automationRuleId}' }, status: 200, after: ['triggerAutomationWebhook'] }
    }, async req => ({ body: await automation.rotateSecrets(req.service, req.params.id) })),

    route({
      method: 'get', path: '/v1/automation/rules/:id/runs', operationId: 'listAutomationRuns', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'Recent runs of a rule, newest first', pathParams: idParam, query: S.ListRunsQuery,
      description: 'Needs automationRules:read. The pagination envelope over the rule\'s runs, newest queued first, filtered by status and by from/to on the time queued. Skipped runs are listed too (matched or conditionResult false). 404 when the rule does not exist or was deleted.',
      responses: { 200: { description: 'a page of runs', schema: S.RunList } }, errors: [400, 404],
      example: { summary: 'Its failed runs', params: { id: '{automationRuleId}' }, query: { status: 'failed' }, status: 200, after: ['triggerAutomationWebhook'] }
    }, async req => ({ body: await automation.listRuns(req.service, req.params.id, parseQuery(S.ListRunsQuery, req.query)) })),

    route({
      method: 'get', path: '/v1/automation/rules/:ruleId/runs/:runId', operationId: 'getAutomationRun', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'One run with its input, steps, request (secrets redacted), response and attempt log', pathParams: runParams,
      description: 'Needs automationRules:read. The run as listed plus input, steps (match, condition, effect with ok, detail and duration), the outgoing request with secrets redacted, the response (body cut at 64 KiB) and the attempt log. 404 when no run of this rule has the id.',
      responses: { 200: { description: 'the run', schema: S.RunDetailBody } }, errors: [404],
      example: { summary: 'The failed run, step by step', params: { ruleId: '{automationRuleId}', runId: '{runId}' }, status: 200 }
    }, async req => ({ body: await automation.getRun(req.service, req.params.ruleId, req.params.runId) })),

    route({
      method: 'post', path: '/v1/automation/rules/:ruleId/runs/:runId/replay', operationId: 'replayAutomationRun', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: 'Replay a failed run: a new run of the live version on the same input, linked by replayOf', pathParams: runParams,
      description: 'Needs automationRules:execute. Only a failed run can be replayed and only while the rule is sandbox or active (409 INVALID_TRANSITION otherwise); the old run is left as it was. The new run is queued for the worker and answered at once.',
      responses: { 202: { description: 'the new run (queued)', schema: S.RunBody } }, errors: [404, 409],
      example: { summary: 'Replay the failed run', params: { ruleId: '{automationRuleId}', runId: '{runId}' }, status: 202 }
    }, async req => ({ status: 202, body: await automation.replayRun(req.service, req.params.ruleId, req.params.runId) })),

    route({
      method: 'get', path: '/v1/schema-registry/automation-rules/:id', operationId: 'automationRuleSchemaVersions', tag: 'schema-registry', auth: 'bearer', feature: 'automation',
      summary: 'Every version of an automation rule with its status and definition', pathParams: idParam,
      description: 'Needs automationRules:read. Every stored version of the rule, oldest first, each with its status, its definition, who created it and when it went to sandbox or was published. 404 when the rule does not exist or was deleted.',
      responses: { 200: { description: 'versions', schema: SchemaRegistryBody } }, errors: [404],
      example: { summary: 'Its versions', params: { id: '{automationRuleId}' }, status: 200, after: ['publishAutomationRule'] }
    }, async req => ({ body: await automation.ruleRegistry(req.service, req.params.id) })),

    route({
      method: 'post', path: '/v1/automation/triggers/:slug', operationId: 'triggerAutomationWebhook', tag: 'automation', auth: 'webhook',
      summary: "Incoming webhook: queues a run of the rule with this slug (Authorization: Bearer <the rule's webhookToken>)",
      description: 'Does nothing but record and enqueue: the run executes on the worker. 401 for a missing or bad token, including a valid token of another rule when the token\'s tenant has an active or sandbox rule with this slug; 404 when that tenant has no active or sandbox rule with the slug. 403 FEATURE_DISABLED when the tenant\'s license switches automation off (checked after the token). An Idempotency-Key header makes a retried call answer the first call\'s run.',
      pathParams: { slug: { description: 'The webhook trigger slug', schema: { type: 'string', pattern: S.SLUG_PATTERN } } },
      headers: { 'Idempotency-Key': { description: 'Optional: at most 128 of A-Za-z0-9._:-', required: false, schema: { type: 'string' } } },
      body: S.IngressBody,
      responses: { 202: { description: 'accepted', schema: S.IngressAccepted } }, errors: [400, 401, 403, 404],
      example: {
        summary: 'A crew reports an inspection of a pole that was removed meanwhile: the run fails (and can be replayed)',
        params: { slug: 'inspections' }, bearer: '{webhookToken}', headers: { 'Idempotency-Key': 'crew-7-2026-11-20' },
        body: { objectId: '{spareObjectId}', date: '2026-11-20' },
        status: 202, saves: { runId: 'runIds.0' }, after: ['publishAutomationRule']
      }
    }, async req => {
      const payload = parse<object>(S.IngressBody, req.body)
      const key = req.header('Idempotency-Key')
      return { status: 202, body: await automation.acceptWebhook(deps, req.params.slug, bearerToken(req.headers.authorization), payload, SAFE_IDEMPOTENCY_KEY.test(key) ? key : null) }
    }),

    route({
      method: 'post', path: '/v1/outbox/flush', operationId: 'flushOutbox', tag: 'automation', auth: 'bearer', feature: 'automation',
      summary: "Deliver the caller's tenant's pending domain events now (automation runs are queued as usual)",
      description: 'Needs automationRules:execute. Delivers the pending outbox events of the caller\'s tenant in batches until none is left or a batch delivers nothing, and answers the counts {delivered, failed, pending}. Events a worker is delivering at that moment are waited for (and not counted in delivered): when the answer comes, every event that was pending has been delivered. Rules triggered by these events get queued runs, executed by the worker as usual.',
      responses: { 200: { description: 'what was delivered', schema: S.FlushBody } }, errors: [403],
      example: { summary: 'Deliver pending events now', status: 200 }
    }, async req => ({ body: await automation.flushOutbox(req.service) })),
  ]
}
