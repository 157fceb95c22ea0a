import type { RouteRegistrar } from '../app.js'
import { defineRoute } from '../openapi/registry.js'
import * as audit from '../../lib/audit/index.js'
import { parseQuery } from '../../lib/validation.js'
import { idParam, service } from '../http/common.js'

const S = audit.schema

export const registerAuditRoutes: RouteRegistrar = (router, guards) => {
  defineRoute(router, guards, {
    method: 'get', path: '/v1/audit/events', operationId: 'listAuditEvents', tag: 'audit', auth: 'bearer', feature: 'audit',
    summary: 'List audit events, newest first (needs auditLogs:read; ?tenant=_system needs system_admin)',
    description: 'Only sequenced events are listed; the chain\'s pending events are sequenced first, so an event whose write ' +
      'was just answered is included. `from` is inclusive and `to` exclusive, both on occurredAt.',
    query: S.ListAuditEventsQuery,
    responses: { 200: { description: 'a page of audit events', schema: S.AuditEventList } }, errors: [400, 403],
    example: { summary: 'The latest object events', query: { resourceType: 'object', limit: 5 }, status: 200, saves: { auditEventId: 'items.0.id' }, after: ['createObject'] }
  }, async ctx => {
    ctx.body = await audit.listEvents(service(ctx), parseQuery<audit.ListEventsQuery>(S.ListAuditEventsQuery, ctx.query))
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/audit/events/:id/proof', operationId: 'proveAuditEvent', tag: 'audit', auth: 'bearer', feature: 'audit',
    summary: 'Verify an event and the whole hash chain from genesis to the head',
    description: 'Recomputes every hash of the chain. `valid` is false when any event between genesis and the head was altered, ' +
      'removed or added; `brokenAt` then names the first sequence that fails. An event of another tenant gives 404.',
    pathParams: idParam, query: S.ProofQuery,
    responses: { 200: { description: 'the proof', schema: S.AuditProof } }, errors: [400, 403, 404],
    example: { summary: 'Verify that event and the chain', params: { id: '{auditEventId}' }, status: 200 }
  }, async ctx => {
    ctx.body = await audit.proveEvent(service(ctx), ctx.params.id, parseQuery<{ tenant?: string }>(S.ProofQuery, ctx.query))
  })
}
