import * as versioning from '../../lib/versioning/index.js'
import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as rules from '../../lib/rules/index.js'
import { parseQuery } from '../../lib/validation.js'
import { idParam } from '../http/common.js'

const S = rules.schema

export const ruleRoutes: RouteModule = () => {
  return [
    route({
      method: 'get', path: '/v1/rules', operationId: 'listRules', tag: 'rules', auth: 'bearer',
      summary: 'List reusable rules (each with its latest version)',
      description: 'Needs rules:read. Filter by kind, status of the latest version or key.',
      query: S.ListRulesQuery,
      responses: { 200: { description: 'a page of rules', schema: S.RuleList } }, errors: [400],
      example: { summary: 'JsonLogic rules', query: { kind: 'jsonlogic' }, status: 200, after: ['createRule'] }
    }, async req => ({ body: await rules.listRules(req.service, parseQuery(S.ListRulesQuery, req.query)) })),

    route({
      method: 'post', path: '/v1/rules', operationId: 'createRule', tag: 'rules', auth: 'bearer',
      summary: 'Create a reusable rule (version 1, draft)',
      description: 'Needs rules:write. key is unique per tenant (409). definition holds the fields of the inline guard of that kind (400 naming the field).',
      body: S.CreateRuleBody,
      responses: { 201: { description: 'created', schema: S.RuleBody } }, errors: [409],
      example: { summary: 'A reusable rule: at least 3 m tall', body: { key: 'tall-enough', name: 'Tall enough', kind: 'jsonlogic', definition: { rule: { '>=': [{ var: 'object.attributes.height' }, 3] }, message: 'a pole is at least 3 m tall' } }, status: 201, saves: { ruleId: 'id' } }
    }, async req => {
      const r = await rules.createRule(req.service, req.body)
      return { status: 201, headers: { Location: `/v1/rules/${r.id}` }, body: r }
    }),

    route({
      method: 'get', path: '/v1/rules/:id', operationId: 'getRule', tag: 'rules', auth: 'bearer',
      summary: 'Read a rule',
      description: 'Needs rules:read. Shows the latest version; guards evaluate publishedVersion.',
      pathParams: idParam,
      responses: { 200: { description: 'the rule', schema: S.RuleBody } }, errors: [404],
      example: { summary: 'The rule', params: { id: '{ruleId}' }, status: 200 }
    }, async req => ({ body: await rules.getRule(req.service, req.params.id) })),

    route({
      method: 'patch', path: '/v1/rules/:id', operationId: 'patchRule', tag: 'rules', auth: 'bearer',
      summary: 'Edit the latest draft or sandbox version; a published latest version gets a new draft version',
      description: 'Needs rules:write. Guards keep using the published version until the new one is published.',
      pathParams: idParam, body: S.PatchRuleBody,
      responses: { 200: { description: 'updated', schema: S.RuleBody } }, errors: [404],
      example: { summary: 'Rename it', params: { id: '{ruleId}' }, body: { name: 'Tall enough (3 m)' }, status: 200 }
    }, async req => ({ body: await rules.patchRule(req.service, req.params.id, req.body) })),

    route({
      method: 'post', path: '/v1/rules/:id/publish', operationId: 'publishRule', tag: 'rules', auth: 'bearer',
      summary: 'Move the latest version forward: draft -> sandbox -> published (guards use the published one)',
      description: 'Needs rules:publish. Body {"to":"sandbox"|"published"} (default published). Moving backwards is 409 INVALID_TRANSITION.',
      pathParams: idParam, body: versioning.PublishBody, bodyRequired: false,
      responses: { 200: { description: 'moved', schema: S.RuleBody } }, errors: [404, 409],
      example: { summary: 'Publish it for guards', params: { id: '{ruleId}' }, body: { to: 'published' }, status: 200, after: ['patchRule'] }
    }, async req => ({ body: await rules.publishRule(req.service, req.params.id, req.body) })),

    route({
      method: 'get', path: '/v1/schema-registry/rules/:id', operationId: 'ruleSchemaVersions', tag: 'schema-registry', auth: 'bearer',
      summary: 'Every version of a rule with its status and definition ({name, kind, definition})',
      description: 'Needs rules:read. Oldest version first.',
      pathParams: idParam,
      responses: { 200: { description: 'versions', schema: versioning.SchemaRegistryBody } }, errors: [404],
      example: { summary: 'Its versions', params: { id: '{ruleId}' }, status: 200, after: ['publishRule'] }
    }, async req => ({ body: await rules.ruleRegistry(req.service, req.params.id) })),
  ]
}
