import * as relations from '../../lib/relations/index.js'
import { present, type GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

type Args = Record<string, any>
type RelationDto = relations.RelationDto

/** GraphQL list arguments -> the REST query string shape, parsed by the same function. */
function listQuery (a: Args): relations.ListQuery {
  const { metadata, ...rest } = present(a) as Args
  const query: Record<string, unknown> = { ...rest }
  for (const m of (metadata ?? []) as Array<{ key: string, value: string }>) query[`metadata.${m.key}`] = m.value
  return relations.parseListQuery(query)
}

export const relationsModule: GraphqlModule = {
  feature: 'relations',
  typeDefs: /* GraphQL */ `
    enum RelationDirection { outgoing incoming all }

    "A directed, typed link between two objects (REST: /v1/relations)"
    type Relation {
      id: ID!
      fromObjectId: ID!
      toObjectId: ID!
      relationType: String!
      metadata: JSON!
      inheritsGeometry: Boolean!
      "Set while the relation is soft-deleted"
      deletedAt: DateTime
      createdAt: DateTime!
      updatedAt: DateTime!
      "The live object the link starts at (null once deleted); batched"
      fromObject: SpatialObject
      "The live object the link points to (null once deleted); batched"
      toObject: SpatialObject
    }

    type RelationPage {
      items: [Relation!]!
      pagination: Pagination!
    }

    "metadata.<key> = value: the JSON scalar at key (a dotted path reaches nested keys) has this text"
    input MetadataFilter {
      key: String!
      value: String!
    }

    input CreateRelationInput {
      fromObjectId: ID!
      toObjectId: ID!
      relationType: String!
      "Default {}"
      metadata: JSON
      "Default false"
      inheritsGeometry: Boolean
    }

    "metadata is a JSON merge patch (RFC 7396)"
    input UpdateRelationInput {
      relationType: String
      metadata: JSON
      inheritsGeometry: Boolean
    }

    extend type Query {
      "Relations of the tenant; every filter given combines with AND (like GET /v1/relations)"
      relations(limit: Int = 100, offset: Int = 0, fromObjectId: ID, toObjectId: ID, relationType: String, includeDeleted: Boolean = false, metadata: [MetadataFilter!]): RelationPage
      "One relation (a soft-deleted one too)"
      relation(id: ID!): Relation
    }

    extend type Mutation {
      "CONFLICT when an identical active link exists"
      createRelation(input: CreateRelationInput!): Relation!
      updateRelation(id: ID!, input: UpdateRelationInput!): Relation!
      "Soft delete; returns true"
      deleteRelation(id: ID!): Boolean!
      restoreRelation(id: ID!): Relation!
    }
  `,
  resolvers: {
    Query: {
      relations: (_: unknown, a: Args, c: GraphqlContext) => relations.listRelations(c.service, listQuery(a)),
      relation: (_: unknown, a: Args, c: GraphqlContext) => relations.getRelation(c.service, a.id)
    },
    Mutation: {
      createRelation: (_: unknown, a: Args, c: GraphqlContext) => relations.createRelation(c.service, a.input),
      updateRelation: (_: unknown, a: Args, c: GraphqlContext) => relations.patchRelation(c.service, a.id, a.input),
      deleteRelation: async (_: unknown, a: Args, c: GraphqlContext) => { await relations.deleteRelation(c.service, a.id); return true },
      restoreRelation: (_: unknown, a: Args, c: GraphqlContext) => relations.restoreRelation(c.service, a.id)
    },
    Relation: {
      fromObject: (r: RelationDto, _: Args, c: GraphqlContext) => c.loaders.objects.load(r.fromObjectId),
      toObject: (r: RelationDto, _: Args, c: GraphqlContext) => c.loaders.objects.load(r.toObjectId)
    }
  }
}
