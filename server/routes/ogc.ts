import type { RouteRegistrar } from '../app.js'
import { defineRoute } from '../openapi/registry.js'
import * as layers from '../../lib/layers/index.js'
import { parseQuery } from '../../lib/validation.js'
import { service } from '../http/common.js'
import { ifNoneMatch, originOf, sendRendered } from './layers.js'

// OGC API - Features Part 1 over the tenant's layers (lib/layers/ogc.ts). Landing page at
// /v1/layers/ogc: `ogrinfo OAPIF:<base>/v1/layers/ogc` and QGIS open it (README).

const S = layers.schema
const ogc = layers.ogc
const collectionId = { collectionId: { description: 'Layer slug', schema: { type: 'string', pattern: S.SLUG_PATTERN } } }
const Doc = { description: 'the document', schema: S.OgcDocument }
const Items = { description: 'a page of features with numberMatched, numberReturned, timeStamp and links', schema: S.FeatureCollection, contentType: 'application/geo+json' }

export const registerOgcRoutes: RouteRegistrar = (router, guards, deps) => {
  const cache = layers.createRenderCache(deps.redis)

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/ogc', operationId: 'ogcLandingPage', tag: 'ogc', auth: 'bearer', feature: 'ogc',
    summary: 'OGC API - Features landing page (links service-desc, conformance and data)', query: S.OgcSimpleQuery,
    responses: { 200: Doc }, errors: [400]
  }, async ctx => {
    parseQuery(S.OgcSimpleQuery, ctx.query)
    ctx.body = await ogc.landingPage(service(ctx), originOf(ctx))
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/ogc/conformance', operationId: 'ogcConformance', tag: 'ogc', auth: 'bearer', feature: 'ogc',
    summary: 'OGC conformance classes: Core, GeoJSON, OpenAPI 3.0', query: S.OgcSimpleQuery, responses: { 200: Doc }, errors: [400]
  }, async ctx => {
    parseQuery(S.OgcSimpleQuery, ctx.query)
    ctx.body = await ogc.conformance(service(ctx), originOf(ctx))
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/ogc/collections', operationId: 'ogcCollections', tag: 'ogc', auth: 'bearer', feature: 'ogc',
    summary: 'One collection per layer, with its spatial and temporal extent', query: S.OgcSimpleQuery, responses: { 200: Doc }, errors: [400]
  }, async ctx => {
    parseQuery(S.OgcSimpleQuery, ctx.query)
    ctx.body = await ogc.collections(service(ctx), originOf(ctx))
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/ogc/collections/:collectionId', operationId: 'ogcCollection', tag: 'ogc', auth: 'bearer', feature: 'ogc',
    summary: 'One collection (layer)', pathParams: collectionId, query: S.OgcSimpleQuery, responses: { 200: Doc }, errors: [400, 404]
  }, async ctx => {
    parseQuery(S.OgcSimpleQuery, ctx.query)
    ctx.body = await ogc.collection(service(ctx), originOf(ctx), ctx.params.collectionId)
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/ogc/collections/:collectionId/items', operationId: 'ogcItems', tag: 'ogc', auth: 'bearer', feature: 'ogc',
    summary: 'Features of a collection: bbox, datetime (on updatedAt), limit (clamped to 10000), offset; next/prev links',
    pathParams: collectionId, query: S.OgcItemsQuery,
    responses: { 200: Items, 304: { description: 'Not modified' } }, errors: [400, 404]
  }, async ctx => {
    const href = `${originOf(ctx)}/v1/layers/ogc/collections/${ctx.params.collectionId}`
    sendRendered(ctx, await ogc.items(service(ctx), cache, ctx.params.collectionId, originOf(ctx) + ctx.originalUrl, href, ctx.query, ifNoneMatch(ctx)), 'application/geo+json')
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/ogc/collections/:collectionId/items/:featureId', operationId: 'ogcItem', tag: 'ogc', auth: 'bearer', feature: 'ogc',
    summary: 'One feature of a collection', query: S.OgcSimpleQuery,
    pathParams: { ...collectionId, featureId: { description: 'Object id', schema: { type: 'string' } } },
    responses: { 200: { description: 'the feature', schema: { type: 'object' }, contentType: 'application/geo+json' } }, errors: [400, 404]
  }, async ctx => {
    parseQuery(S.OgcSimpleQuery, ctx.query)
    ctx.type = 'application/geo+json'
    ctx.body = await ogc.item(service(ctx), originOf(ctx), ctx.params.collectionId, ctx.params.featureId)
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/ogc/features', operationId: 'ogcFeatures', tag: 'ogc', auth: 'bearer', feature: 'ogc',
    summary: 'A layer\'s features as an OGC FeatureCollection (SPEC): layer, limit, offset, bbox; links self and next',
    query: S.OgcFeaturesQuery, responses: { 200: Items, 304: { description: 'Not modified' } }, errors: [400, 404]
  }, async ctx => {
    const layer = typeof ctx.query.layer === 'string' ? ctx.query.layer : ''
    sendRendered(ctx, await ogc.items(service(ctx), cache, layer, originOf(ctx) + ctx.originalUrl, null, ctx.query, ifNoneMatch(ctx)), 'application/geo+json')
  })
}
