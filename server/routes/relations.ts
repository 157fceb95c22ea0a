import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as relations from '../../lib/relations/index.js'
import { parseQuery } from '../../lib/validation.js'
import { Uuid } from '../../lib/schemas.js'
import { idParam } from '../http/common.js'

const S = relations.schema

export const relationRoutes: RouteModule = () => {
  return [
    route({
      method: 'get', path: '/v1/relations', operationId: 'listRelations', tag: 'relations', auth: 'bearer', feature: 'relations',
      summary: 'List relations; filters fromObjectId, toObjectId, relationType and metadata.<key> combine with AND',
      description: S.METADATA_FILTER_DESCRIPTION,
      query: S.ListRelationsQuery, responses: { 200: { description: 'a page of relations', schema: S.RelationList } }, errors: [400],
      example: { summary: 'Links of type feeds', query: { relationType: 'feeds' }, status: 200, after: ['createRelation'] }
    }, async req => ({ body: await relations.listRelations(req.service, relations.parseListQuery(req.query)) })),

    route({
      method: 'post', path: '/v1/relations', operationId: 'createRelation', tag: 'relations', auth: 'bearer', feature: 'relations',
      summary: 'Link two objects of the tenant (409 CONFLICT when an identical active link exists)',
      description: 'Needs relations:write. Both ends must be live objects of the tenant (400 naming the missing one); a self-link is 400. metadata defaults to {} and inheritsGeometry to false.',
      body: S.CreateRelationBody,
      responses: { 201: { description: 'created', schema: S.RelationBody, headers: { Location: { description: 'The new relation', schema: { type: 'string' } } } } },
      errors: [409],
      example: { summary: 'The first pole feeds the second over cable A1', body: { fromObjectId: '{objectId}', toObjectId: '{otherObjectId}', relationType: 'feeds', metadata: { cable: 'A1' } }, status: 201, saves: { relationId: 'id' } }
    }, async req => {
      const r = await relations.createRelation(req.service, req.body)
      return { status: 201, headers: { Location: `/v1/relations/${r.id}` }, body: r }
    }),

    route({
      method: 'get', path: '/v1/relations/:id', operationId: 'getRelation', tag: 'relations', auth: 'bearer', feature: 'relations',
      summary: 'Read a relation (a soft-deleted one too: deletedAt is set)',
      description: 'Needs relations:read. A soft-deleted relation is still found, with deletedAt set.',
      pathParams: idParam,
      responses: { 200: { description: 'the relation', schema: S.RelationBody } }, errors: [404],
      example: { summary: 'The link', params: { id: '{relationId}' }, status: 200 }
    }, async req => ({ body: await relations.getRelation(req.service, req.params.id) })),

    route({
      method: 'patch', path: '/v1/relations/:id', operationId: 'patchRelation', tag: 'relations', auth: 'bearer', feature: 'relations',
      summary: 'Change relationType, metadata (JSON merge patch) or inheritsGeometry of an active relation',
      description: 'Needs relations:write. A change of relationType that would duplicate an active link is 409 CONFLICT. A deleted relation is 404 until restored.',
      pathParams: idParam,
      body: S.PatchRelationBody, responses: { 200: { description: 'updated', schema: S.RelationBody } }, errors: [404, 409],
      example: { summary: 'Record the cable length (merge patch)', params: { id: '{relationId}' }, body: { metadata: { lengthMeters: 80 } }, status: 200 }
    }, async req => ({ body: await relations.patchRelation(req.service, req.params.id, req.body) })),

    route({
      method: 'delete', path: '/v1/relations/:id', operationId: 'deleteRelation', tag: 'relations', auth: 'bearer', feature: 'relations',
      summary: 'Soft-delete a relation (kept with deletedAt; restorable)',
      description: 'Needs relations:write. Sets deletedAt; the record is kept and can be restored.',
      pathParams: idParam,
      responses: { 204: { description: 'deleted' } }, errors: [404],
      example: { summary: 'Soft-delete the link', params: { id: '{relationId}' }, status: 204, after: ['patchRelation', 'getRelation', 'listRelations', 'listObjectRelations'] }
    }, async req => {
      await relations.deleteRelation(req.service, req.params.id)
      return { status: 204 }
    }),

    route({
      method: 'post', path: '/v1/relations/:id/restore', operationId: 'restoreRelation', tag: 'relations', auth: 'bearer', feature: 'relations',
      summary: 'Restore a soft-deleted relation (an active one is returned unchanged)',
      description: '409 CONFLICT when an identical link (same from, to and type) became active meanwhile, or when an end object no longer exists.',
      pathParams: idParam, responses: { 200: { description: 'restored', schema: S.RelationBody } }, errors: [404, 409],
      example: { summary: 'Restore it', params: { id: '{relationId}' }, status: 200, after: ['deleteRelation'] }
    }, async req => ({ body: await relations.restoreRelation(req.service, req.params.id) })),

    route({
      method: 'get', path: '/v1/objects/:objectId/relations', operationId: 'listObjectRelations', tag: 'relations', auth: 'bearer', feature: 'relations',
      summary: 'Relations of one object: outgoing (from it), incoming (to it) or all',
      description: 'Needs relations:read. 404 when the object is not a live object of the tenant. Ordered by creation.',
      pathParams: { objectId: { description: 'A live object of the tenant', schema: Uuid } },
      query: S.ObjectRelationsQuery, responses: { 200: { description: 'a page of relations', schema: S.RelationList } }, errors: [400, 404],
      example: { summary: 'Outgoing links of the first pole', params: { objectId: '{objectId}' }, query: { direction: 'outgoing' }, status: 200, after: ['createRelation'] }
    }, async req => {
      const q = parseQuery<relations.ObjectRelationsQuery>(S.ObjectRelationsQuery, req.query)
      return { body: await relations.listObjectRelations(req.service, req.params.objectId, q) }
    }),
  ]
}
