import * as versioning from '../../lib/versioning/index.js'
import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as objectTypes from '../../lib/object-types/index.js'
import { parseQuery } from '../../lib/validation.js'
import { idParam } from '../http/common.js'

const S = objectTypes.schema

export const objectTypeRoutes: RouteModule = () => {
  return [
    route({
      method: 'get', path: '/v1/object-types', operationId: 'listObjectTypes', tag: 'object-types', auth: 'bearer',
      summary: 'List object types (each with its latest version)',
      description: 'Needs objectTypes:read. Filter by status of the latest version or by key; ordered by creation.',
      query: S.ListObjectTypesQuery,
      responses: { 200: { description: 'a page of object types', schema: S.ObjectTypeList } }, errors: [400],
      example: { summary: 'Published types', query: { status: 'published', limit: 10 }, status: 200, after: ['publishObjectType'] }
    }, async req => ({ body: await objectTypes.listObjectTypes(req.service, parseQuery(S.ListObjectTypesQuery, req.query)) })),

    route({
      method: 'post', path: '/v1/object-types', operationId: 'createObjectType', tag: 'object-types', auth: 'bearer',
      summary: 'Create an object type (version 1, draft)',
      description: 'Needs objectTypes:write. key is unique per tenant (409 CONFLICT). The attributeSchema, geometry rules, validation rules and publicIdTemplate are checked (400 naming the field); a workflowId must exist in the tenant.',
      body: S.CreateObjectTypeBody,
      responses: { 201: { description: 'created', schema: S.ObjectTypeBody } }, errors: [409],
      example: {
        summary: 'A utility pole: material and height, a point, at least 3 m tall, public ids POLE-00001...',
        body: {
          key: 'pole', name: 'Utility pole', workflowId: '{workflowId}',
          attributeSchema: { type: 'object', required: ['material'], properties: { material: { type: 'string' }, height: { type: 'number', minimum: 0 } } },
          geometry: { required: true, types: ['Point'] },
          validationRules: [{ name: 'tall-enough', rule: { '>=': [{ var: 'attributes.height' }, 3] }, message: 'a pole is at least 3 m tall' }],
          publicIdTemplate: 'POLE-{{seq:5}}'
        },
        status: 201, saves: { typeId: 'id' }
      }
    }, async req => {
      const t = await objectTypes.createObjectType(req.service, req.body)
      return { status: 201, headers: { Location: `/v1/object-types/${t.id}` }, body: t }
    }),

    route({
      method: 'get', path: '/v1/object-types/:id', operationId: 'getObjectType', tag: 'object-types', auth: 'bearer',
      summary: 'Read an object type',
      description: 'Needs objectTypes:read. Shows the latest version and, in publishedVersion, the version objects validate against.',
      pathParams: idParam,
      responses: { 200: { description: 'the object type', schema: S.ObjectTypeBody } }, errors: [404],
      example: { summary: 'The pole type', params: { id: '{typeId}' }, status: 200 }
    }, async req => ({ body: await objectTypes.getObjectType(req.service, req.params.id) })),

    route({
      method: 'patch', path: '/v1/object-types/:id', operationId: 'patchObjectType', tag: 'object-types', auth: 'bearer',
      summary: 'Edit the latest draft or sandbox version; a published latest version gets a new draft version',
      description: 'Needs objectTypes:write. Fields replace those of the latest version; the result is checked as a whole (400 naming the field). Objects keep validating against publishedVersion until the new version is published.',
      pathParams: idParam, body: S.PatchObjectTypeBody,
      responses: { 200: { description: 'updated', schema: S.ObjectTypeBody } }, errors: [404],
      example: { summary: 'Describe it (the published type gets a new draft version)', params: { id: '{typeId}' }, body: { description: 'Poles of the overhead network' }, status: 200, after: ['publishObjectType'] }
    }, async req => ({ body: await objectTypes.patchObjectType(req.service, req.params.id, req.body) })),

    route({
      method: 'delete', path: '/v1/object-types/:id', operationId: 'deleteObjectType', tag: 'object-types', auth: 'bearer',
      summary: 'Delete an object type that has no live objects',
      description: 'Needs objectTypes:write. 409 CONFLICT while the type still has live objects.',
      pathParams: idParam,
      responses: { 204: { description: 'deleted' } }, errors: [404, 409],
      example: { summary: 'Delete a type without objects', params: { id: '{spareTypeId}' }, status: 204, setup: [{ method: 'post', path: '/v1/object-types', body: { key: 'spare', name: 'Spare' }, saves: { spareTypeId: 'id' } }] }
    }, async req => {
      await objectTypes.deleteObjectType(req.service, req.params.id)
      return { status: 204 }
    }),

    route({
      method: 'post', path: '/v1/object-types/:id/publish', operationId: 'publishObjectType', tag: 'object-types', auth: 'bearer',
      summary: 'Move the latest version forward: draft -> sandbox -> published',
      description: 'Needs objectTypes:publish. Body {"to":"sandbox"|"published"} (default published); from draft to published both steps are recorded. Moving backwards is 409 INVALID_TRANSITION.',
      pathParams: idParam,
      body: versioning.PublishBody, bodyRequired: false,
      responses: { 200: { description: 'moved', schema: S.ObjectTypeBody } }, errors: [404, 409],
      example: { summary: 'Publish version 1 (passing sandbox)', params: { id: '{typeId}' }, body: { to: 'published' }, status: 200 }
    }, async req => ({ body: await objectTypes.publishObjectType(req.service, req.params.id, req.body) })),

    route({
      method: 'post', path: '/v1/object-types/:id/validate', operationId: 'validateAgainstObjectType', heavy: 'request', tag: 'object-types', auth: 'bearer',
      summary: 'Dry run: validate attributes and geometry against any version of the type',
      description: 'Needs objectTypes:read. Writes nothing: answers {valid, version, errors} for the given attributes and geometry against the chosen version (default the latest), the way a create would check them.',
      pathParams: idParam,
      body: S.ValidateBody, bodyRequired: false, bodyText: true,
      responses: { 200: { description: 'the verdict', schema: S.ValidateResult } }, errors: [404],
      example: { summary: 'Would a 2 m pole pass? (no: the rule tall-enough)', params: { id: '{typeId}' }, body: { attributes: { material: 'wood', height: 2 }, geometry: { type: 'Point', coordinates: [13.4, 52.52] } }, status: 200 }
    }, async req => ({ body: await objectTypes.validateAgainstType(req.service, req.params.id, (req.body as string | undefined) ?? '') })),

    route({
      method: 'get', path: '/v1/schema-registry/object-types/:id', operationId: 'objectTypeSchemaVersions', tag: 'schema-registry', auth: 'bearer',
      summary: 'Every version of an object type with its status and definition',
      description: 'Needs objectTypes:read. Oldest version first, each with its status, definition and the times it reached sandbox and published.',
      pathParams: idParam,
      responses: { 200: { description: 'versions', schema: versioning.SchemaRegistryBody } }, errors: [404],
      example: { summary: 'Every version of the pole type', params: { id: '{typeId}' }, status: 200, after: ['patchObjectType'] }
    }, async req => ({ body: await objectTypes.objectTypeRegistry(req.service, req.params.id) })),
  ]
}
