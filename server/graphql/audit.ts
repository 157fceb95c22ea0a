import * as audit from '../../lib/audit/index.js'
import { listArgs, type GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

type Args = Record<string, any>
const S = audit.schema

export const auditModule: GraphqlModule = {
  feature: 'audit',
  typeDefs: /* GraphQL */ `
    "One event of the tenant's tamper-evident audit chain"
    type AuditEvent {
      id: ID!
      "Per tenant, from 1, without gaps"
      sequence: Int!
      type: String!
      actor: Actor
      resourceType: String!
      resourceId: String
      data: JSON!
      occurredAt: DateTime!
      previousHash: String!
      "sha256hex(previousHash + canonical JSON of the event)"
      hash: String!
    }

    type AuditEventPage {
      items: [AuditEvent!]!
      pagination: Pagination!
    }

    type AuditProofChecks {
      hashMatches: Boolean!
      linkMatches: Boolean!
      chainIntact: Boolean!
    }

    type AuditProof {
      eventId: ID!
      sequence: Int!
      hash: String!
      previousHash: String!
      "False when any event between genesis and the head was altered, removed or added"
      valid: Boolean!
      checks: AuditProofChecks!
      headSequence: Int
      headHash: String
      "The first sequence where a check fails"
      brokenAt: Int
    }

    extend type Query {
      "Newest first (needs auditLogs:read; tenant: \\"_system\\" needs system_admin)"
      auditEvents(limit: Int = 100, offset: Int = 0, type: String, resourceType: String, resourceId: String, from: DateTime, to: DateTime, tenant: String): AuditEventPage
      "Verifies an event and the whole hash chain from genesis to the head"
      auditProof(id: ID!, tenant: String): AuditProof
    }
  `,
  resolvers: {
    Query: {
      auditEvents: (_: unknown, a: Args, c: GraphqlContext) => audit.listEvents(c.service, listArgs(S.ListAuditEventsQuery, a)),
      auditProof: (_: unknown, { id, ...q }: Args, c: GraphqlContext) => audit.proveEvent(c.service, id, listArgs(S.ProofQuery, q))
    }
  }
}
