import * as layers from '../../lib/layers/index.js'
import { present, type GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

type Args = Record<string, any>

// Layer definitions (REST: /v1/layers/definitions). Exports, tiles and OGC stay REST-only: they
// are streams and binary documents, not GraphQL data.
export const layersModule: GraphqlModule = {
  typeDefs: /* GraphQL */ `
    "A named, reusable selection of objects and the fields it exports (REST: /v1/layers/definitions)"
    type Layer {
      id: ID!
      name: String!
      "^[a-z0-9][a-z0-9_-]{0,62}$, unique per tenant; names the layer in tiles, exports and OGC"
      slug: String!
      description: String
      "{filters: {typeId?, workflowState?, attributes?, bbox?, query?}, fields?}"
      definition: JSON!
      "The layer's cache lifetime (LAYER_CACHE_TTL_SECONDS unless set)"
      cacheTtlSeconds: Int!
      version: Int!
      createdAt: DateTime!
      updatedAt: DateTime!
    }

    type LayerPage {
      items: [Layer!]!
      pagination: Pagination!
    }

    input CreateLayerInput {
      name: String!
      slug: String!
      description: String
      definition: JSON
      cacheTtlSeconds: Int
    }

    "Fields given replace those of the layer"
    input UpdateLayerInput {
      name: String
      slug: String
      description: String
      definition: JSON
      cacheTtlSeconds: Int
    }

    extend type Query {
      "Layer definitions, oldest first (needs layers:read)"
      layers(limit: Int = 100, offset: Int = 0): LayerPage
      "One layer by id or slug"
      layer(idOrSlug: String!): Layer
    }

    extend type Mutation {
      createLayer(input: CreateLayerInput!): Layer!
      updateLayer(idOrSlug: String!, input: UpdateLayerInput!): Layer!
      "Deletes the definition for good (its objects stay). Returns true"
      deleteLayer(idOrSlug: String!): Boolean!
    }
  `,
  resolvers: {
    Query: {
      layers: (_: unknown, a: Args, c: GraphqlContext) => layers.listLayers(c.service, present(a)),
      layer: (_: unknown, a: Args, c: GraphqlContext) => layers.getLayer(c.service, a.idOrSlug)
    },
    Mutation: {
      createLayer: (_: unknown, a: Args, c: GraphqlContext) => layers.createLayer(c.service, a.input),
      updateLayer: (_: unknown, a: Args, c: GraphqlContext) => layers.patchLayer(c.service, a.idOrSlug, a.input),
      deleteLayer: async (_: unknown, a: Args, c: GraphqlContext) => { await layers.deleteLayer(c.service, a.idOrSlug); return true }
    }
  }
}
