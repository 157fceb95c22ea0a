import * as rules from '../../lib/rules/index.js'
import { listArgs, type GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

type Args = Record<string, any>
const S = rules.schema

export const rulesModule: GraphqlModule = {
  typeDefs: /* GraphQL */ `
    enum RuleKind { jsonlogic spatial }

    "A reusable guard rule at its latest version (REST: /v1/rules); guards use the published version"
    type Rule {
      id: ID!
      key: String!
      name: String!
      kind: RuleKind!
      "jsonlogic: {rule, message?}; spatial: {operator, geometry, distanceMeters?, message?}"
      definition: JSON!
      version: Int!
      status: VersionStatus!
      publishedVersion: Int
      createdAt: DateTime!
      updatedAt: DateTime!
    }

    type RulePage {
      items: [Rule!]!
      pagination: Pagination!
    }

    input CreateRuleInput {
      key: String!
      name: String!
      kind: RuleKind!
      definition: JSON!
    }

    input UpdateRuleInput {
      name: String
      definition: JSON
    }

    extend type Query {
      rules(limit: Int = 100, offset: Int = 0, kind: RuleKind, status: VersionStatus, key: String): RulePage
      rule(id: ID!): Rule
      ruleVersions(id: ID!): [SchemaVersion!]
    }

    extend type Mutation {
      createRule(input: CreateRuleInput!): Rule!
      updateRule(id: ID!, input: UpdateRuleInput!): Rule!
      publishRule(id: ID!, to: PublishTarget = published): Rule!
    }
  `,
  resolvers: {
    Query: {
      rules: (_: unknown, a: Args, c: GraphqlContext) => rules.listRules(c.service, listArgs(S.ListRulesQuery, a)),
      rule: (_: unknown, a: Args, c: GraphqlContext) => rules.getRule(c.service, a.id),
      ruleVersions: async (_: unknown, a: Args, c: GraphqlContext) => (await rules.ruleRegistry(c.service, a.id)).versions
    },
    Mutation: {
      createRule: (_: unknown, a: Args, c: GraphqlContext) => rules.createRule(c.service, a.input),
      updateRule: (_: unknown, a: Args, c: GraphqlContext) => rules.patchRule(c.service, a.id, a.input),
      publishRule: (_: unknown, a: Args, c: GraphqlContext) => rules.publishRule(c.service, a.id, { to: a.to })
    }
  }
}
