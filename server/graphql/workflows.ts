import * as workflows from '../../lib/workflows/index.js'
import { listArgs, type GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

type Args = Record<string, any>
const S = workflows.schema

export const workflowsModule: GraphqlModule = {
  typeDefs: /* GraphQL */ `
    type WorkflowState {
      name: String!
      final: Boolean
    }

    type WorkflowTransition {
      "Source states (an array), or \\"*\\" for every non-final state other than the target"
      from: JSON!
      targetState: String!
      "permission {requiredRole}; jsonlogic {rule, message?}; spatial {operator, geometry, distanceMeters?, message?}; rule {ruleId}"
      guards: [JSON!]!
    }

    "A workflow state machine at its latest version (REST: /v1/workflows)"
    type Workflow {
      id: ID!
      key: String!
      name: String!
      initialState: String!
      states: [WorkflowState!]!
      transitions: [WorkflowTransition!]!
      "The latest version, which objects follow"
      version: Int!
      createdAt: DateTime!
      updatedAt: DateTime!
    }

    type WorkflowPage {
      items: [Workflow!]!
      pagination: Pagination!
    }

    "One guard's outcome: evaluated is true when it passes; reason says why in words"
    type GuardOutcome {
      type: String!
      requiredRole: String
      operator: String
      ruleId: ID
      evaluated: Boolean!
      reason: String!
    }

    type AvailableTransition {
      targetState: String!
      "Every guard passes and the caller holds objects:transition (false without it, whatever the guards)"
      allowed: Boolean!
      guards: [GuardOutcome!]!
    }

    "Every transition from the object's current state, allowed or not"
    type TransitionExplanation {
      objectId: ID!
      "null when the object type has no workflow"
      currentState: String
      workflowId: ID
      workflowVersion: Int
      availableTransitions: [AvailableTransition!]!
    }

    input WorkflowStateInput {
      name: String!
      final: Boolean
    }

    input WorkflowTransitionInput {
      "An array of state names, or \\"*\\""
      from: JSON!
      targetState: String!
      guards: [JSON!]
    }

    input CreateWorkflowInput {
      key: String!
      name: String!
      initialState: String!
      states: [WorkflowStateInput!]!
      transitions: [WorkflowTransitionInput!]
    }

    "Fields replace those of the latest version; the result is version N+1, effective at once"
    input UpdateWorkflowInput {
      name: String
      initialState: String
      states: [WorkflowStateInput!]
      transitions: [WorkflowTransitionInput!]
    }

    extend type Query {
      workflows(limit: Int = 100, offset: Int = 0, key: String): WorkflowPage
      workflow(id: ID!): Workflow
      "Every version of a workflow (each published when written)"
      workflowVersions(id: ID!): [SchemaVersion!]
      "Like GET /v1/objects/{id}/workflow/explain-transitions"
      explainTransitions(objectId: ID!): TransitionExplanation
    }

    extend type Mutation {
      createWorkflow(input: CreateWorkflowInput!): Workflow!
      "version, when given, must be the latest (VERSION_CONFLICT otherwise)"
      updateWorkflow(id: ID!, input: UpdateWorkflowInput!, version: Int): Workflow!
      """
      Moves an object to another workflow state. No such move: INVALID_TRANSITION; a failing guard:
      GUARD_FAILED with extensions.details.guards as in explainTransitions. version, when given,
      must be the object's current version.
      """
      transitionObject(id: ID!, targetState: String!, comment: String, version: Int): SpatialObject!
    }
  `,
  resolvers: {
    Query: {
      workflows: (_: unknown, a: Args, c: GraphqlContext) => workflows.listWorkflows(c.service, listArgs(S.ListWorkflowsQuery, a)),
      workflow: (_: unknown, a: Args, c: GraphqlContext) => workflows.getWorkflow(c.service, a.id),
      workflowVersions: async (_: unknown, a: Args, c: GraphqlContext) => (await workflows.workflowRegistry(c.service, a.id)).versions,
      explainTransitions: (_: unknown, a: Args, c: GraphqlContext) => workflows.explainTransitions(c.service, a.objectId)
    },
    Mutation: {
      createWorkflow: (_: unknown, a: Args, c: GraphqlContext) => workflows.createWorkflow(c.service, a.input),
      updateWorkflow: (_: unknown, a: Args, c: GraphqlContext) => workflows.patchWorkflow(c.service, a.id, a.input, a.version ?? null),
      transitionObject: (_: unknown, { id, version, ...body }: Args, c: GraphqlContext) => workflows.transitionObject(c.service, id, body, version ?? null)
    }
  }
}
