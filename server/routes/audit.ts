import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as audit from '../../lib/audit/index.js'
import { parseQuery } from '../../lib/validation.js'
import { idParam } from '../http/common.js'

const S = audit.schema

export const auditRoutes: RouteModule = () => {
  return [
    route({
      method: 'get', path: '/v1/audit/events', operationId: 'listAuditEvents', tag: 'audit', auth: 'bearer', feature: 'audit',
      summary: 'List audit events, newest first (needs auditLogs:read; ?tenant=_system needs system_admin)',
      description: 'Only sequenced events are listed; the chain\'s pending events are sequenced first, so an event whose write ' +
        'was just answered is included. `from` is inclusive and `to` exclusive, both on occurredAt.',
      query: S.ListAuditEventsQuery,
      responses: { 200: { description: 'a page of audit events', schema: S.AuditEventList } }, errors: [400, 403],
      example: { summary: 'The latest object events', query: { resourceType: 'object', limit: 5 }, status: 200, saves: { auditEventId: 'items.0.id' }, after: ['createObject'] }
    }, async req => ({ body: await audit.listEvents(req.service, parseQuery<audit.ListEventsQuery>(S.ListAuditEventsQuery, req.query)) })),

    route({
      method: 'get', path: '/v1/audit/events/:id/proof', operationId: 'proveAuditEvent', tag: 'audit', auth: 'bearer', feature: 'audit',
      summary: 'Verify an event and the whole hash chain from genesis to the head',
      description: 'Recomputes every hash of the chain. `valid` is false when any event between genesis and the head was altered, ' +
        'removed or added; `brokenAt` then names the first sequence that fails. An event of another tenant gives 404.',
      pathParams: idParam, query: S.ProofQuery,
      responses: { 200: { description: 'the proof', schema: S.AuditProof } }, errors: [400, 403, 404],
      example: { summary: 'Verify that event and the chain', params: { id: '{auditEventId}' }, status: 200 }
    }, async req => ({ body: await audit.proveEvent(req.service, req.params.id, parseQuery<{ tenant?: string }>(S.ProofQuery, req.query)) })),

    route({
      method: 'get', path: '/v1/audit/tree-head', operationId: 'getAuditTreeHead', tag: 'audit', auth: 'bearer', feature: 'audit',
      summary: 'The signed head of the chain\'s Merkle tree (RFC 9162): size, root hash, timestamp, Ed25519 signature',
      description: 'The chain\'s pending events are sequenced first, so every answered write is in the tree. Keep heads you ' +
        'receive: a consistency proof later shows that the tree only grew since.',
      query: S.TreeHeadQuery,
      responses: { 200: { description: 'the signed tree head', schema: S.SignedTreeHead } }, errors: [400, 403],
      example: { summary: 'The signed head of the tree over the tenant\'s events', status: 200, after: ['createObject'] }
    }, async req => ({ body: await audit.treeHead(req.service, parseQuery<{ tenant?: string }>(S.TreeHeadQuery, req.query)) })),

    route({
      method: 'get', path: '/v1/audit/events/:id/inclusion-proof', operationId: 'getAuditInclusionProof', tag: 'audit', auth: 'bearer', feature: 'audit',
      summary: 'An O(log n) proof that an event is in the chain\'s Merkle tree (RFC 9162 inclusion proof)',
      description: 'The audit path of the event\'s leaf in the tree of `treeSize` (default: the current tree) with that tree\'s signed ' +
        'head. Unlike /proof it does not recompute the chain: the verifier recomputes the event\'s hash and leaf and checks the path ' +
        'against a root it trusts. An event of another tenant gives 404.',
      pathParams: idParam, query: S.InclusionProofQuery,
      responses: { 200: { description: 'the inclusion proof', schema: S.InclusionProof } }, errors: [400, 403, 404],
      example: { summary: 'The audit path of that event in the current tree', params: { id: '{auditEventId}' }, status: 200 }
    }, async req => ({ body: await audit.inclusionProof(req.service, req.params.id, parseQuery<{ tenant?: string, treeSize?: number }>(S.InclusionProofQuery, req.query)) })),

    route({
      method: 'get', path: '/v1/audit/consistency-proof', operationId: 'getAuditConsistencyProof', tag: 'audit', auth: 'bearer', feature: 'audit',
      summary: 'An O(log n) proof that the tree of size `first` is a prefix of the tree of size `second` (RFC 9162 consistency proof)',
      description: 'Both roots and the proof, with the signed head of the tree of size `second` (default: the current tree). ' +
        'Check `firstRootHash` against a tree head you kept.',
      query: S.ConsistencyProofQuery,
      responses: { 200: { description: 'the consistency proof', schema: S.ConsistencyProof } }, errors: [400, 403],
      example: { summary: 'The tree after the first event is a prefix of the current tree', query: { first: 1 }, status: 200, after: ['listAuditEvents'] }
    }, async req => ({ body: await audit.consistencyProof(req.service, parseQuery<{ tenant?: string, first: number, second?: number }>(S.ConsistencyProofQuery, req.query)) })),
  ]
}
