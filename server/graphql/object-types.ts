import * as objectTypes from '../../lib/object-types/index.js'
import { listArgs, type GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

type Args = Record<string, any>
const S = objectTypes.schema

export const objectTypesModule: GraphqlModule = {
  typeDefs: /* GraphQL */ `
    "Which geometries objects of a type may carry"
    type GeometryRules {
      required: Boolean!
      "GeoJSON type names, e.g. Point; empty = any"
      types: [String!]!
      "Repair a geometry PostGIS finds invalid (ST_MakeValid) instead of refusing it"
      makeValid: Boolean!
    }

    "A JsonLogic rule over {typeId, attributes, geometry, workflowState}; message when it does not hold"
    type ValidationRule {
      name: String!
      rule: JSON!
      message: String
    }

    "An object type at its latest version (REST: /v1/object-types)"
    type ObjectType {
      id: ID!
      key: String!
      name: String!
      description: String
      "JSON Schema (type object) for attributes"
      attributeSchema: JSON
      geometry: GeometryRules!
      validationRules: [ValidationRule!]!
      workflowId: ID
      publicIdTemplate: String
      "The latest version"
      version: Int!
      "Status of the latest version"
      status: VersionStatus!
      "The version objects validate against"
      publishedVersion: Int
      createdAt: DateTime!
      updatedAt: DateTime!
    }

    type ObjectTypePage {
      items: [ObjectType!]!
      pagination: Pagination!
    }

    type ValidationFault {
      field: String!
      reason: String!
    }

    type ValidationResult {
      valid: Boolean!
      version: Int!
      errors: [ValidationFault!]!
    }

    input GeometryRulesInput {
      required: Boolean
      types: [String!]
      makeValid: Boolean
    }

    input ValidationRuleInput {
      name: String!
      rule: JSON!
      message: String
    }

    input CreateObjectTypeInput {
      key: String!
      name: String!
      description: String
      attributeSchema: JSON
      geometry: GeometryRulesInput
      validationRules: [ValidationRuleInput!]
      workflowId: ID
      publicIdTemplate: String
    }

    "Edits the latest draft or sandbox version; a published latest version gets a new draft version"
    input UpdateObjectTypeInput {
      name: String
      description: String
      attributeSchema: JSON
      geometry: GeometryRulesInput
      validationRules: [ValidationRuleInput!]
      workflowId: ID
      publicIdTemplate: String
    }

    extend type Query {
      objectTypes(limit: Int = 100, offset: Int = 0, status: VersionStatus, key: String): ObjectTypePage
      objectType(id: ID!): ObjectType
      "Every version with its status and definition (the schema registry)"
      objectTypeVersions(id: ID!): [SchemaVersion!]
      "Dry run: validate attributes and geometry against any version of a type (default the latest)"
      validateObject(typeId: ID!, attributes: JSON, geometry: JSON, version: Int): ValidationResult
    }

    extend type Mutation {
      "Version 1, draft"
      createObjectType(input: CreateObjectTypeInput!): ObjectType!
      updateObjectType(id: ID!, input: UpdateObjectTypeInput!): ObjectType!
      "CONFLICT while the type has live objects; returns true"
      deleteObjectType(id: ID!): Boolean!
      "Moves the latest version forward; backwards is INVALID_TRANSITION"
      publishObjectType(id: ID!, to: PublishTarget = published): ObjectType!
    }
  `,
  resolvers: {
    Query: {
      objectTypes: (_: unknown, a: Args, c: GraphqlContext) => objectTypes.listObjectTypes(c.service, listArgs(S.ListObjectTypesQuery, a)),
      objectType: (_: unknown, a: Args, c: GraphqlContext) => objectTypes.getObjectType(c.service, a.id),
      objectTypeVersions: async (_: unknown, a: Args, c: GraphqlContext) => (await objectTypes.objectTypeRegistry(c.service, a.id)).versions,
      validateObject: (_: unknown, { typeId, ...body }: Args, c: GraphqlContext) => objectTypes.validateAgainstType(c.service, typeId, JSON.stringify(body))
    },
    Mutation: {
      createObjectType: (_: unknown, a: Args, c: GraphqlContext) => objectTypes.createObjectType(c.service, a.input),
      updateObjectType: (_: unknown, a: Args, c: GraphqlContext) => objectTypes.patchObjectType(c.service, a.id, a.input),
      deleteObjectType: async (_: unknown, a: Args, c: GraphqlContext) => { await objectTypes.deleteObjectType(c.service, a.id); return true },
      publishObjectType: (_: unknown, a: Args, c: GraphqlContext) => objectTypes.publishObjectType(c.service, a.id, { to: a.to })
    }
  }
}
