import * as objects from '../../lib/objects/index.js'
import * as relations from '../../lib/relations/index.js'
import { listArgs, type GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'
import { gated } from './features.js'

type Args = Record<string, any>
type ObjectDto = objects.ObjectDto
const S = objects.schema

/** Arguments of the per-object relation fields -> the batch filter (one loader per distinct set). */
function perObject (a: Args): relations.PerObjectFilter {
  const q = listArgs<relations.ObjectRelationsQuery>(relations.schema.ObjectRelationsQuery, a)
  return { direction: q.direction, relationType: q.relationType, includeDeleted: q.includeDeleted, limit: q.limit }
}

export const objectsModule: GraphqlModule = {
  typeDefs: /* GraphQL */ `
    "A spatial object of the tenant (REST: /v1/objects)"
    type SpatialObject {
      id: ID!
      typeId: ID!
      "From the type's publicIdTemplate at creation, else the id"
      publicId: String!
      attributes: JSON!
      "GeoJSON geometry (WGS84), or null"
      geometry: JSON
      workflowState: String
      "1 on create, +1 on every change; updateObject and deleteObject take it for optimistic locking"
      version: Int!
      validFrom: DateTime!
      createdAt: DateTime!
      updatedAt: DateTime!
      "The object type (its latest version); batched across a list"
      type: ObjectType
      "Relations touching this object (now, even when the object was read asOf); batched across a list"
      relations(direction: RelationDirection = all, relationType: String, includeDeleted: Boolean = false, limit: Int = 100): [Relation!]!
      "The live objects at the other end of this object's active relations, each once however many relations link it (in the order of its first one; limit counts relations); batched across a list"
      relatedObjects(direction: RelationDirection = all, relationType: String, limit: Int = 100): [SpatialObject!]!
    }

    type SpatialObjectPage {
      items: [SpatialObject!]!
      pagination: Pagination!
    }

    enum HistoryOperation { created updated deleted transitioned }

    "One version of an object: valid time (validFrom/validTo) and transaction time (txFrom/txTo)"
    type ObjectVersion {
      version: Int!
      operation: HistoryOperation!
      validFrom: DateTime!
      validTo: DateTime
      txFrom: DateTime!
      txTo: DateTime
      actor: Actor
      object: SpatialObject!
      "Set when this version's write repaired the geometry sent (the object type's geometry.makeValid): what PostGIS found, {reason, location}"
      geometryRepair: JSON
    }

    type ObjectVersionPage {
      items: [ObjectVersion!]!
      pagination: Pagination!
    }

    input CreateObjectInput {
      "The object type's id; the type needs a published version"
      typeId: ID!
      attributes: JSON
      geometry: JSON
      validFrom: DateTime
    }

    "attributes is a JSON merge patch (RFC 7396: null removes a key); geometry replaces (null clears)"
    input UpdateObjectInput {
      attributes: JSON
      geometry: JSON
      validFrom: DateTime
    }

    extend type Query {
      "Objects of the tenant (like GET /v1/objects; asOf = transaction time, validAt = valid time)"
      objects(limit: Int = 100, offset: Int = 0, typeId: ID, sortBy: String = "createdAt", sortOrder: SortOrder = asc, asOf: DateTime, validAt: DateTime): [SpatialObject!]
      "The same list with the pagination envelope"
      objectPage(limit: Int = 100, offset: Int = 0, typeId: ID, sortBy: String = "createdAt", sortOrder: SortOrder = asc, asOf: DateTime, validAt: DateTime): SpatialObjectPage
      "One object, now or as of a past time; NOT_FOUND when there is none"
      object(id: ID!, asOf: DateTime, validAt: DateTime): SpatialObject
      "Every version of an object, oldest first"
      objectHistory(id: ID!, limit: Int = 100, offset: Int = 0): ObjectVersionPage
    }

    extend type Mutation {
      createObject(input: CreateObjectInput!): SpatialObject!
      "version is the If-Match of REST: VERSION_CONFLICT when the object has moved on"
      updateObject(id: ID!, version: Int!, input: UpdateObjectInput!): SpatialObject!
      "Soft delete; version, when given, must be the current one. Returns true"
      deleteObject(id: ID!, version: Int): Boolean!
    }
  `,
  resolvers: {
    Query: {
      objects: async (_: unknown, a: Args, c: GraphqlContext) => (await objects.listObjects(c.service, listArgs(S.ListObjectsQuery, a))).items,
      objectPage: (_: unknown, a: Args, c: GraphqlContext) => objects.listObjects(c.service, listArgs(S.ListObjectsQuery, a)),
      object: (_: unknown, a: Args, c: GraphqlContext) => objects.getObject(c.service, a.id, listArgs(S.GetObjectQuery, { asOf: a.asOf, validAt: a.validAt })),
      objectHistory: (_: unknown, a: Args, c: GraphqlContext) => objects.objectHistory(c.service, a.id, listArgs(S.HistoryQuery, { limit: a.limit, offset: a.offset }))
    },
    Mutation: {
      createObject: (_: unknown, a: Args, c: GraphqlContext) => objects.createObject(c.service, a.input),
      updateObject: (_: unknown, a: Args, c: GraphqlContext) => objects.patchObject(c.service, a.id, a.input, a.version),
      deleteObject: async (_: unknown, a: Args, c: GraphqlContext) => { await objects.deleteObject(c.service, a.id, a.version ?? null); return true }
    },
    SpatialObject: {
      type: (o: ObjectDto, _: Args, c: GraphqlContext) => c.loaders.objectTypes.load(o.typeId),
      ...gated('relations', {
        relations: (o: ObjectDto, a: Args, c: GraphqlContext) => c.loaders.relations(perObject(a)).load(o.id),
        relatedObjects: async (o: ObjectDto, a: Args, c: GraphqlContext) => {
          const links = await c.loaders.relations(perObject(a)).load(o.id)
          const ends = await c.loaders.objects.loadMany(relations.otherEnds(links, o.id))
          const failed = ends.find(e => e instanceof Error)
          if (failed !== undefined) throw failed
          return ends.filter(e => e !== null)
        }
      })
    }
  }
}
