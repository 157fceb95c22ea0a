import type { RouteRegistrar } from '../app.js'
import * as versioning from '../../lib/versioning/index.js'
import { defineRoute } from '../openapi/registry.js'
import * as objectTypes from '../../lib/object-types/index.js'
import { parseQuery } from '../../lib/validation.js'
import { idParam, service } from '../http/common.js'

const S = objectTypes.schema

export const registerObjectTypeRoutes: RouteRegistrar = (router, guards) => {
  defineRoute(router, guards, {
    method: 'get', path: '/v1/object-types', operationId: 'listObjectTypes', tag: 'object-types', auth: 'bearer',
    summary: 'List object types (each with its latest version)', query: S.ListObjectTypesQuery,
    responses: { 200: { description: 'a page of object types', schema: S.ObjectTypeList } }, errors: [400]
  }, async ctx => {
    ctx.body = await objectTypes.listObjectTypes(service(ctx), parseQuery(S.ListObjectTypesQuery, ctx.query))
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/object-types', operationId: 'createObjectType', tag: 'object-types', auth: 'bearer',
    summary: 'Create an object type (version 1, draft)', body: S.CreateObjectTypeBody,
    responses: { 201: { description: 'created', schema: S.ObjectTypeBody } }, errors: [409]
  }, async ctx => {
    const t = await objectTypes.createObjectType(service(ctx), ctx.request.body)
    ctx.status = 201
    ctx.set('Location', `/v1/object-types/${t.id}`)
    ctx.body = t
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/object-types/:id', operationId: 'getObjectType', tag: 'object-types', auth: 'bearer',
    summary: 'Read an object type', pathParams: idParam,
    responses: { 200: { description: 'the object type', schema: S.ObjectTypeBody } }, errors: [404]
  }, async ctx => {
    ctx.body = await objectTypes.getObjectType(service(ctx), ctx.params.id)
  })

  defineRoute(router, guards, {
    method: 'patch', path: '/v1/object-types/:id', operationId: 'patchObjectType', tag: 'object-types', auth: 'bearer',
    summary: 'Edit the latest draft or sandbox version; a published latest version gets a new draft version',
    pathParams: idParam, body: S.PatchObjectTypeBody,
    responses: { 200: { description: 'updated', schema: S.ObjectTypeBody } }, errors: [404]
  }, async ctx => {
    ctx.body = await objectTypes.patchObjectType(service(ctx), ctx.params.id, ctx.request.body)
  })

  defineRoute(router, guards, {
    method: 'delete', path: '/v1/object-types/:id', operationId: 'deleteObjectType', tag: 'object-types', auth: 'bearer',
    summary: 'Delete an object type that has no live objects', pathParams: idParam,
    responses: { 204: { description: 'deleted' } }, errors: [404, 409]
  }, async ctx => {
    await objectTypes.deleteObjectType(service(ctx), ctx.params.id)
    ctx.status = 204
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/object-types/:id/publish', operationId: 'publishObjectType', tag: 'object-types', auth: 'bearer',
    summary: 'Move the latest version forward: draft -> sandbox -> published', pathParams: idParam,
    body: versioning.PublishBody, bodyRequired: false,
    responses: { 200: { description: 'moved', schema: S.ObjectTypeBody } }, errors: [404, 409]
  }, async ctx => {
    ctx.body = await objectTypes.publishObjectType(service(ctx), ctx.params.id, ctx.request.body)
  })

  defineRoute(router, guards, {
    method: 'post', path: '/v1/object-types/:id/validate', operationId: 'validateAgainstObjectType', tag: 'object-types', auth: 'bearer',
    summary: 'Dry run: validate attributes and geometry against any version of the type', pathParams: idParam,
    body: S.ValidateBody, bodyRequired: false,
    responses: { 200: { description: 'the verdict', schema: S.ValidateResult } }, errors: [404]
  }, async ctx => {
    ctx.body = await objectTypes.validateAgainstType(service(ctx), ctx.params.id, ctx.request.body)
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/schema-registry/object-types/:id', operationId: 'objectTypeSchemaVersions', tag: 'schema-registry', auth: 'bearer',
    summary: 'Every version of an object type with its status and definition', pathParams: idParam,
    responses: { 200: { description: 'versions', schema: versioning.SchemaRegistryBody } }, errors: [404]
  }, async ctx => {
    ctx.body = await objectTypes.objectTypeRegistry(service(ctx), ctx.params.id)
  })
}
