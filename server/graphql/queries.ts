import * as queries from '../../lib/queries/index.js'
import type { GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

type Args = Record<string, any>

export const queriesModule: GraphqlModule = {
  feature: 'queries',
  typeDefs: /* GraphQL */ `
    """
    A leaf {field, operator, value[, distanceMeters]} or a combination {operator: and|or|not, filters}.
    Fields: id, typeId, publicId, workflowState, createdAt, updatedAt, geometry, attributes.<name>.
    Operators: equals (eq), notEquals (ne), in, notIn, greaterThan (gt), greaterThanOrEqual (gte),
    lessThan (lt), lessThanOrEqual (lte), contains, startsWith, endsWith, exists, notExists, isNull,
    isNotNull; on geometry within, contains, intersects, dwithin (with distanceMeters), bbox.
    The same grammar, limits and errors as POST /v1/queries/objects/run.
    """
    input QueryFilter {
      field: String
      operator: String!
      value: JSON
      distanceMeters: Float
      filters: [QueryFilter!]
    }

    input QuerySort {
      field: String!
      order: SortOrder
    }

    enum AggregateFunction { count sum avg min max }

    input QueryAggregation {
      "Any field, or * for count"
      field: String!
      function: AggregateFunction!
    }

    "The query DSL of POST /v1/queries/objects/run (without graph)"
    input ObjectQuery {
      "Combined with AND"
      filters: [QueryFilter!]
      "Earlier entries take precedence; default createdAt asc"
      sorts: [QuerySort!]
      limit: Int
      offset: Int
      "Over the whole filtered set, not the page"
      aggregations: [QueryAggregation!]
      "Transaction time"
      asOf: DateTime
    }

    "Graph expansion: objectIds are the start when given (filters then do not apply), else the page of results"
    input GraphExpansion {
      objectIds: [ID!]
      "Relation hops from the start, default 1, at most 5"
      maxDepth: Int
      relationTypes: [String!]
      relationDirection: RelationDirection
    }

    type Aggregate {
      field: String!
      function: AggregateFunction!
      "A number; a timestamp for min/max of createdAt/updatedAt; text for publicId/workflowState; null over no values"
      value: JSON
    }

    type ObjectQueryResult {
      items: [SpatialObject!]!
      pagination: Pagination!
      aggregations: [Aggregate!]
    }

    type GraphNode {
      id: ID!
      typeId: ID!
      attributes: JSON!
      "The whole live object; batched"
      object: SpatialObject
    }

    type GraphEdge {
      id: ID!
      fromObjectId: ID!
      toObjectId: ID!
      relationType: String!
      metadata: JSON!
    }

    type ObjectGraph {
      objects: [GraphNode!]!
      relations: [GraphEdge!]!
      "true when more objects were reachable than the graph limit; the nearest ones are returned"
      truncated: Boolean!
    }

    extend type Query {
      "Runs the query DSL: filters, sorts, paging, aggregations, asOf (like POST /v1/queries/objects/run)"
      queryObjects(query: ObjectQuery): ObjectQueryResult
      "Runs the query DSL with graph expansion"
      objectGraph(query: ObjectQuery, graph: GraphExpansion!): ObjectGraph
    }
  `,
  resolvers: {
    Query: {
      queryObjects: (_: unknown, a: Args, c: GraphqlContext) => queries.runQuery(c.service, a.query ?? {}),
      objectGraph: (_: unknown, a: Args, c: GraphqlContext) => queries.runQuery(c.service, { ...(a.query ?? {}), graph: a.graph })
    },
    GraphNode: {
      object: (n: { id: string }, _: Args, c: GraphqlContext) => c.loaders.objects.load(n.id)
    }
  }
}
