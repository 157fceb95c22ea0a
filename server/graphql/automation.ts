import * as automation from '../../lib/automation/index.js'
import { listArgs, type GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

type Args = Record<string, any>
const S = automation.schema

export const automationModule: GraphqlModule = {
  feature: 'automation',
  typeDefs: /* GraphQL */ `
    "draft never runs; sandbox records dry runs; active applies effects"
    enum AutomationRuleStatus { draft sandbox active }
    enum AutomationPublishTarget { sandbox active }
    enum AutomationRunStatus { queued running succeeded failed skipped dry_run }

    "An automation rule at its latest version (REST: /v1/automation/rules)"
    type AutomationRule {
      id: ID!
      name: String!
      description: String
      status: AutomationRuleStatus!
      "The latest version (shown here)"
      version: Int!
      "The version that runs (null while draft)"
      liveVersion: Int
      "{type: webhook, slug} | {type: object.event, events, typeId?} | {type: schedule, cron, timezone?}"
      trigger: JSON!
      match: JSON
      "JsonLogic over the payload"
      condition: JSON
      "{type: workflow.transition | object.update | webhook, ...}"
      effect: JSON!
      "Shown once: on create, or when an update first adds a webhook trigger"
      webhookToken: String
      "Shown once, like webhookToken, for rules with a webhook effect"
      signingSecret: String
      createdAt: DateTime!
      updatedAt: DateTime!
    }

    type AutomationRulePage {
      items: [AutomationRule!]!
      pagination: Pagination!
    }

    "One run of a rule"
    type AutomationRun {
      id: ID!
      ruleId: ID!
      ruleVersion: Int!
      status: AutomationRunStatus!
      "{type, eventId? | scheduledAt? | requestId?, replayOf?}"
      trigger: JSON!
      matched: Boolean
      conditionResult: Boolean
      "Outgoing webhook calls made"
      attempts: Int!
      queuedAt: DateTime!
      startedAt: DateTime
      finishedAt: DateTime
      durationMs: Int
      "{code, message}"
      error: JSON
      replayOf: ID
    }

    type AutomationRunPage {
      items: [AutomationRun!]!
      pagination: Pagination!
    }

    "A run with what it saw and did (REST: GET /v1/automation/rules/{ruleId}/runs/{runId})"
    type AutomationRunDetail {
      id: ID!
      ruleId: ID!
      ruleVersion: Int!
      status: AutomationRunStatus!
      trigger: JSON!
      matched: Boolean
      conditionResult: Boolean
      attempts: Int!
      queuedAt: DateTime!
      startedAt: DateTime
      finishedAt: DateTime
      durationMs: Int
      error: JSON
      replayOf: ID
      "The payload match and condition saw"
      input: JSON
      "[{phase: match | condition | effect, ok, detail, durationMs}]"
      steps: JSON!
      "The outgoing request, secrets redacted"
      request: JSON
      "{status, headers, body (cut at 64 KiB)}"
      response: JSON
      attemptLog: JSON!
    }

    "One version of an automation rule"
    type AutomationRuleVersion {
      version: Int!
      status: String!
      definition: JSON!
      createdAt: DateTime!
      createdBy: String
      sandboxAt: DateTime
      publishedAt: DateTime
    }

    "New secrets, each shown only here"
    type AutomationRuleSecrets {
      id: ID!
      webhookToken: String
      signingSecret: String
    }

    type OutboxFlush {
      delivered: Int!
      failed: Int!
      pending: Int!
    }

    input CreateAutomationRuleInput {
      name: String!
      description: String
      trigger: JSON!
      match: JSON
      condition: JSON
      effect: JSON!
    }

    "Fields given replace those of the latest version; null clears description, match or condition"
    input UpdateAutomationRuleInput {
      name: String
      description: String
      trigger: JSON
      match: JSON
      condition: JSON
      effect: JSON
    }

    extend type Query {
      "Rules at their latest version, oldest first (needs automationRules:read)"
      automationRules(limit: Int = 100, offset: Int = 0, status: AutomationRuleStatus): AutomationRulePage
      automationRule(id: ID!): AutomationRule
      "Every version of a rule, oldest first"
      automationRuleVersions(id: ID!): [AutomationRuleVersion!]
      "Runs of a rule, newest first"
      automationRuns(ruleId: ID!, limit: Int = 100, offset: Int = 0, status: AutomationRunStatus, from: DateTime, to: DateTime): AutomationRunPage
      automationRun(ruleId: ID!, runId: ID!): AutomationRunDetail
    }

    extend type Mutation {
      "Version 1, draft"
      createAutomationRule(input: CreateAutomationRuleInput!): AutomationRule!
      "A draft in place; a live rule gets a new draft version that goes live on the next publish"
      updateAutomationRule(id: ID!, input: UpdateAutomationRuleInput!): AutomationRule!
      publishAutomationRule(id: ID!, to: AutomationPublishTarget = active): AutomationRule!
      "Back to draft: it stops running"
      deactivateAutomationRule(id: ID!): AutomationRule!
      "It stops running; its runs stay readable. Returns true"
      deleteAutomationRule(id: ID!): Boolean!
      rotateAutomationRuleToken(id: ID!): AutomationRuleSecrets!
      "A new run of the live version on a failed run's input, queued for the worker"
      replayAutomationRun(ruleId: ID!, runId: ID!): AutomationRun!
      "Deliver the tenant's pending domain events now (needs automationRules:execute)"
      flushOutbox: OutboxFlush!
    }
  `,
  resolvers: {
    Query: {
      automationRules: (_: unknown, a: Args, c: GraphqlContext) => automation.listRules(c.service, listArgs(S.ListRulesQuery, a)),
      automationRule: (_: unknown, a: Args, c: GraphqlContext) => automation.getRule(c.service, a.id),
      automationRuleVersions: async (_: unknown, a: Args, c: GraphqlContext) => (await automation.ruleRegistry(c.service, a.id)).versions,
      automationRuns: (_: unknown, { ruleId, ...q }: Args, c: GraphqlContext) => automation.listRuns(c.service, ruleId, listArgs(S.ListRunsQuery, q)),
      automationRun: (_: unknown, a: Args, c: GraphqlContext) => automation.getRun(c.service, a.ruleId, a.runId)
    },
    Mutation: {
      createAutomationRule: (_: unknown, a: Args, c: GraphqlContext) => automation.createRule(c.service, a.input),
      updateAutomationRule: (_: unknown, a: Args, c: GraphqlContext) => automation.patchRule(c.service, a.id, a.input),
      publishAutomationRule: (_: unknown, a: Args, c: GraphqlContext) => automation.publishRule(c.service, a.id, { to: a.to }),
      deactivateAutomationRule: (_: unknown, a: Args, c: GraphqlContext) => automation.deactivateRule(c.service, a.id),
      deleteAutomationRule: async (_: unknown, a: Args, c: GraphqlContext) => { await automation.deleteRule(c.service, a.id); return true },
      rotateAutomationRuleToken: (_: unknown, a: Args, c: GraphqlContext) => automation.rotateSecrets(c.service, a.id),
      replayAutomationRun: (_: unknown, a: Args, c: GraphqlContext) => automation.replayRun(c.service, a.ruleId, a.runId),
      flushOutbox: (_: unknown, _a: Args, c: GraphqlContext) => automation.flushOutbox(c.service)
    }
  }
}
