import { JSON_TYPE, route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as objects from '../../lib/objects/index.js'
import { parseQuery } from '../../lib/validation.js'
import { readIfMatch, requireIfMatch } from '../http/preconditions.js'
import { ETagHeader, IfMatchOptional, IfMatchRequired, idParam } from '../http/common.js'

const S = objects.schema

export const objectRoutes: RouteModule = () => {
  return [
    route({
      method: 'get', path: '/v1/objects', operationId: 'listObjects', tag: 'objects', auth: 'bearer',
      summary: 'List objects (asOf: transaction time; validAt: valid time)',
      description: 'Needs objects:read. The pagination envelope; sortBy takes a column or attributes.<name>. asOf reads transaction time, validAt valid time (not both).',
      query: S.ListObjectsQuery, responses: { 200: { description: 'a page of objects', schema: S.ObjectList } }, errors: [400],
      example: { summary: 'The tallest poles first', query: { typeId: '{typeId}', sortBy: 'attributes.height', sortOrder: 'desc', limit: 10 }, status: 200, after: ['createObjects'] }
    }, async req => ({ bytes: await objects.listObjectsJson(req.service, parseQuery<objects.ListQuery>(S.ListObjectsQuery, req.query)), type: JSON_TYPE })),

    route({
      method: 'post', path: '/v1/objects', operationId: 'createObject', tag: 'objects', auth: 'bearer',
      summary: 'Create an object of a published type',
      description: 'Needs objects:write; counts against object_count. Attributes are validated against the type\'s published JSON Schema and rules, geometry against its geometry rules (400 naming the field). The answer carries ETag (the version) and Location.',
      body: S.CreateObjectBody,
      responses: { 201: { description: 'created', schema: S.ObjectBody, headers: { ...ETagHeader, Location: { description: 'The new object', schema: { type: 'string' } } } } },
      errors: [409],
      example: {
        summary: 'A 9 m wooden pole in Berlin',
        body: { typeId: '{typeId}', attributes: { material: 'wood', height: 9 }, geometry: { type: 'Point', coordinates: [13.4, 52.52] } },
        status: 201, saves: { objectId: 'id' }, after: ['publishObjectType']
      }
    }, async req => {
      const o = await objects.createObject(req.service, req.body)
      return { status: 201, headers: { Location: `/v1/objects/${o.id}`, ETag: `"${o.version}"` }, body: o }
    }),

    route({
      method: 'post', path: '/v1/objects/batch', operationId: 'createObjects', tag: 'objects', auth: 'bearer',
      summary: 'Create up to 1,000 objects in one transaction (all or none; a refused item is named by its index)',
      description: 'Needs objects:write. Body {items: [create body, ...]}, 1 to 1,000 items, each validated like POST /v1/objects. One transaction and one statement: every object gets its own history version, audit event, outbox event and counter deltas, or nothing is written. A refused item answers 400 with details.index and details.field (e.g. items[17].attributes.height); a taken publicId 409. Counts item by item against object_count.',
      body: S.CreateObjectsBody, responses: { 201: { description: 'created, in the order given', schema: S.CreateObjectsResult } },
      errors: [409],
      example: {
        summary: 'Two more poles in one transaction',
        body: { items: [
          { typeId: '{typeId}', attributes: { material: 'steel', height: 12 }, geometry: { type: 'Point', coordinates: [13.41, 52.52] } },
          { typeId: '{typeId}', attributes: { material: 'concrete', height: 10 }, geometry: { type: 'Point', coordinates: [13.42, 52.53] } }
        ] },
        status: 201, saves: { otherObjectId: 'items.0.id' }, after: ['publishObjectType']
      }
    }, async req => ({ status: 201, body: await objects.createObjects(req.service, req.body) })),

    route({
      method: 'get', path: '/v1/objects/:id', operationId: 'getObject', tag: 'objects', auth: 'bearer',
      summary: 'Read an object, now or as of a past time',
      description: 'Needs objects:read. 404 when the object does not exist (or did not yet or no longer exist at asOf/validAt). The ETag is the version, for If-Match.',
      pathParams: idParam, query: S.GetObjectQuery,
      responses: { 200: { description: 'the object', schema: S.ObjectBody, headers: ETagHeader } }, errors: [400, 404],
      example: { summary: 'The pole now', params: { id: '{objectId}' }, status: 200 }
    }, async req => {
      const t = parseQuery<objects.TimePoint>(S.GetObjectQuery, req.query)
      const o = await objects.getObjectJson(req.service, req.params.id, t)
      return { headers: { ETag: `"${o.version}"` }, bytes: o.json, type: JSON_TYPE }
    }),

    route({
      method: 'patch', path: '/v1/objects/:id', operationId: 'patchObject', tag: 'objects', auth: 'bearer',
      summary: 'Update an object (If-Match required; attributes are a JSON merge patch)',
      description: 'Needs objects:write. If-Match is required (400 PRECONDITION_REQUIRED without it) and must name the current version (409 VERSION_CONFLICT with details.currentVersion otherwise). workflowState cannot be changed here: use the transitions endpoint.',
      pathParams: idParam,
      headers: IfMatchRequired, body: S.PatchObjectBody,
      responses: { 200: { description: 'updated', schema: S.ObjectBody, headers: ETagHeader } }, errors: [404, 409],
      example: { summary: 'It is 12 m tall (If-Match: version 1)', params: { id: '{objectId}' }, headers: { 'If-Match': '"1"' }, body: { attributes: { height: 12 } }, status: 200 }
    }, async req => {
      const ifMatch = requireIfMatch(req)
      const o = await objects.patchObject(req.service, req.params.id, req.body, ifMatch)
      return { headers: { ETag: `"${o.version}"` }, body: o }
    }),

    route({
      method: 'delete', path: '/v1/objects/:id', operationId: 'deleteObject', tag: 'objects', auth: 'bearer',
      summary: 'Soft-delete an object (history keeps it; asOf before the delete still finds it)',
      description: 'Needs objects:write. Soft delete: later reads give 404, asOf before the delete still finds it, history keeps it. If-Match is checked when present.',
      pathParams: idParam,
      headers: IfMatchOptional, responses: { 204: { description: 'deleted' } }, errors: [400, 404, 409],
      example: {
        summary: 'Soft-delete a pole',
        params: { id: '{spareObjectId}' }, status: 204, after: ['publishObjectType'],
        setup: [{ method: 'post', path: '/v1/objects', body: { typeId: '{typeId}', attributes: { material: 'wood', height: 4 }, geometry: { type: 'Point', coordinates: [13.5, 52.5] } }, saves: { spareObjectId: 'id' } }]
      }
    }, async req => {
      await objects.deleteObject(req.service, req.params.id, readIfMatch(req))
      return { status: 204 }
    }),

    route({
      method: 'get', path: '/v1/objects/:id/history', operationId: 'objectHistory', tag: 'objects', auth: 'bearer',
      summary: 'Valid-time and transaction-time history, oldest version first',
      description: 'Needs objects:read. Each version with its operation, valid-time and transaction-time bounds and actor; the current version has validTo and txTo null.',
      pathParams: idParam, query: S.HistoryQuery,
      responses: { 200: { description: 'versions', schema: S.HistoryList } }, errors: [400, 404],
      example: { summary: 'Versions of the pole, oldest first', params: { id: '{objectId}' }, status: 200, after: ['patchObject'] }
    }, async req => ({ body: await objects.objectHistory(req.service, req.params.id, parseQuery(S.HistoryQuery, req.query)) })),
  ]
}
