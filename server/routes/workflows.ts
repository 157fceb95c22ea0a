import * as versioning from '../../lib/versioning/index.js'
import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as workflows from '../../lib/workflows/index.js'
import { parseQuery } from '../../lib/validation.js'
import { readIfMatch } from '../http/preconditions.js'
import { ETagHeader, IfMatchOptional, idParam } from '../http/common.js'
import { ObjectBody } from '../../lib/objects/schema.js'

const S = workflows.schema

export const workflowRoutes: RouteModule = () => {
  return [
    route({
      method: 'get', path: '/v1/workflows', operationId: 'listWorkflows', tag: 'workflows', auth: 'bearer',
      summary: 'List workflows (each at its latest version)',
      description: 'Needs workflows:read. Each workflow at its latest version.',
      query: S.ListWorkflowsQuery,
      responses: { 200: { description: 'a page of workflows', schema: S.WorkflowList } }, errors: [400],
      example: { summary: 'The first page of workflows', query: { limit: 10 }, status: 200, after: ['createWorkflow'] }
    }, async req => ({ body: await workflows.listWorkflows(req.service, parseQuery(S.ListWorkflowsQuery, req.query)) })),

    route({
      method: 'post', path: '/v1/workflows', operationId: 'createWorkflow', tag: 'workflows', auth: 'bearer',
      summary: 'Create a workflow state machine (version 1, effective at once)',
      description: 'Needs workflows:write. key is unique per tenant (409). States, transitions and guards are checked as a whole (400 naming the path, e.g. transitions[1].guards[0].requiredRole).',
      body: S.CreateWorkflowBody,
      responses: { 201: { description: 'created', schema: S.WorkflowBody } }, errors: [409],
      example: {
        summary: 'A review workflow: draft -> review -> approved (admins only)',
        body: {
          key: 'review', name: 'Review', initialState: 'draft',
          states: [{ name: 'draft' }, { name: 'review' }, { name: 'approved', final: true }],
          transitions: [
            { from: ['draft'], targetState: 'review' },
            { from: ['review'], targetState: 'approved', guards: [{ type: 'permission', requiredRole: 'admin' }] },
            { from: '*', targetState: 'draft' }
          ]
        },
        status: 201, saves: { workflowId: 'id' }
      }
    }, async req => {
      const wf = await workflows.createWorkflow(req.service, req.body)
      return { status: 201, headers: { Location: `/v1/workflows/${wf.id}` }, body: wf }
    }),

    route({
      method: 'get', path: '/v1/workflows/:id', operationId: 'getWorkflow', tag: 'workflows', auth: 'bearer',
      summary: 'Read a workflow definition (its latest version)',
      description: 'Needs workflows:read. The latest version, which objects follow.',
      pathParams: idParam,
      responses: { 200: { description: 'the workflow', schema: S.WorkflowBody } }, errors: [404],
      example: { summary: 'The review workflow', params: { id: '{workflowId}' }, status: 200 }
    }, async req => ({ body: await workflows.getWorkflow(req.service, req.params.id) })),

    route({
      method: 'patch', path: '/v1/workflows/:id', operationId: 'patchWorkflow', tag: 'workflows', auth: 'bearer',
      summary: 'Change a workflow: the result is version N+1, effective at once (If-Match optional)',
      description: 'Needs workflows:write. Every change is a new version, effective at once for every object that follows the workflow. If-Match, when present, must be the latest version (409 VERSION_CONFLICT).',
      pathParams: idParam, headers: IfMatchOptional, body: S.PatchWorkflowBody,
      responses: { 200: { description: 'the new version', schema: S.WorkflowBody } }, errors: [404, 409],
      example: { summary: 'Rename it (version 2)', params: { id: '{workflowId}' }, headers: { 'If-Match': '"1"' }, body: { name: 'Review (v2)' }, status: 200 }
    }, async req => ({ body: await workflows.patchWorkflow(req.service, req.params.id, req.body, readIfMatch(req)) })),

    route({
      method: 'get', path: '/v1/schema-registry/workflows/:id', operationId: 'workflowSchemaVersions', tag: 'schema-registry', auth: 'bearer',
      summary: 'Every version of a workflow (each published when written)',
      description: 'Needs workflows:read. Workflow versions are effective when written, so each is listed as published.',
      pathParams: idParam,
      responses: { 200: { description: 'versions', schema: versioning.SchemaRegistryBody } }, errors: [404],
      example: { summary: 'Its versions', params: { id: '{workflowId}' }, status: 200, after: ['patchWorkflow'] }
    }, async req => ({ body: await workflows.workflowRegistry(req.service, req.params.id) })),

    route({
      method: 'post', path: '/v1/objects/:id/workflow/transitions', operationId: 'transitionObject', tag: 'workflows', auth: 'bearer',
      summary: 'Move an object to another workflow state (guards must pass; If-Match optional)',
      description: 'No workflow or no such move from the current state: 409 INVALID_TRANSITION. A failing guard: 403 GUARD_FAILED with details.guards as in explain.',
      pathParams: idParam, headers: IfMatchOptional, body: S.TransitionBody,
      responses: { 200: { description: 'the object in its new state', schema: ObjectBody, headers: ETagHeader } }, errors: [404, 409],
      example: { summary: 'Send the pole to review', params: { id: '{objectId}' }, body: { targetState: 'review', comment: 'ready for review' }, status: 200, after: ['patchObject'] }
    }, async req => {
      const o = await workflows.transitionObject(req.service, req.params.id, req.body, readIfMatch(req))
      return { headers: { ETag: `"${o.version}"` }, body: o }
    }),

    route({
      method: 'get', path: '/v1/objects/:id/workflow/explain-transitions', operationId: 'explainTransitions', tag: 'workflows', auth: 'bearer',
      summary: 'Every transition from the current state, allowed or not, with each guard\'s outcome and reason',
      description: 'Needs objects:read. Evaluates every guard of every transition from the current state for the caller, without moving the object: evaluated is the guard\'s outcome and reason says why in words. ' +
        'allowed is true when the caller could make the transition now: every guard passes and the caller holds objects:transition. A caller without objects:transition (a viewer) sees every transition with allowed false, its guards still evaluated and listed.',
      pathParams: idParam,
      responses: { 200: { description: 'the explanation', schema: S.ExplainBody } }, errors: [404],
      example: { summary: 'What the caller may do with the pole next', params: { id: '{objectId}' }, status: 200 }
    }, async req => ({ body: await workflows.explainTransitions(req.service, req.params.id) })),
  ]
}
