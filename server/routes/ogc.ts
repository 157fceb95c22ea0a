import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as layers from '../../lib/layers/index.js'
import { parseQuery } from '../../lib/validation.js'
import { conditions, originOf, rendered } from './layers.js'

// OGC API - Features Part 1 over the tenant's layers (lib/layers/ogc.ts). Landing page at
// /v1/layers/ogc: `ogrinfo OAPIF:<base>/v1/layers/ogc` and QGIS open it (README).

const S = layers.schema
const ogc = layers.ogc
const collectionId = { collectionId: { description: 'Layer slug', schema: { type: 'string', pattern: S.SLUG_PATTERN } } }
const Doc = { description: 'the document', schema: S.OgcDocument }
const Items = { description: 'a page of features with numberMatched, numberReturned, timeStamp and links', schema: S.FeatureCollection, contentType: 'application/geo+json' }

export const ogcRoutes: RouteModule = (deps) => {
  const cache = deps.renderCache

  return [
    route({
      method: 'get', path: '/v1/layers/ogc', operationId: 'ogcLandingPage', tag: 'ogc', auth: 'bearer', feature: 'ogc',
      summary: 'OGC API - Features landing page (links service-desc, conformance and data)', query: S.OgcSimpleQuery,
      description: 'Needs objects:read; off (403 FEATURE_DISABLED) when the license switches ogc off. Links are absolute: this document, the OpenAPI document (service-desc), the conformance classes and the collections (data). The only query parameter accepted is f (json or geojson); any other gives 400.',
      responses: { 200: Doc }, errors: [400],
      example: { summary: 'The landing page', status: 200 }
    }, async req => {
      parseQuery(S.OgcSimpleQuery, req.query)
      return { body: await ogc.landingPage(req.service, originOf(req)) }
    }),

    route({
      method: 'get', path: '/v1/layers/ogc/conformance', operationId: 'ogcConformance', tag: 'ogc', auth: 'bearer', feature: 'ogc',
      summary: 'OGC conformance classes: Core, GeoJSON, OpenAPI 3.0',
      description: 'Needs objects:read; behind the ogc license switch. conformsTo lists the OGC API - Features Part 1 classes Core, GeoJSON and OpenAPI 3.0. An unknown query parameter gives 400.',
      query: S.OgcSimpleQuery, responses: { 200: Doc }, errors: [400],
      example: { summary: 'The conformance classes', status: 200 }
    }, async req => {
      parseQuery(S.OgcSimpleQuery, req.query)
      return { body: await ogc.conformance(req.service, originOf(req)) }
    }),

    route({
      method: 'get', path: '/v1/layers/ogc/collections', operationId: 'ogcCollections', tag: 'ogc', auth: 'bearer', feature: 'ogc',
      summary: 'One collection per layer, with its spatial and temporal extent',
      description: 'Needs objects:read; behind the ogc license switch. Each of the tenant\'s layers (up to 1,000, oldest first) as a collection whose id is the layer slug, with the bbox of its objects (CRS84), the updatedAt interval and links to itself and its items. An unknown query parameter gives 400.',
      query: S.OgcSimpleQuery, responses: { 200: Doc }, errors: [400],
      example: { summary: 'One collection per layer', status: 200, after: ['createLayer'] }
    }, async req => {
      parseQuery(S.OgcSimpleQuery, req.query)
      return { body: await ogc.collections(req.service, originOf(req)) }
    }),

    route({
      method: 'get', path: '/v1/layers/ogc/collections/:collectionId', operationId: 'ogcCollection', tag: 'ogc', auth: 'bearer', feature: 'ogc',
      summary: 'One collection (layer)',
      description: 'Needs objects:read; behind the ogc license switch. The layer with this slug described as in the collections list: title, extent and links to its items. 404 when no layer has the slug; an unknown query parameter gives 400.',
      pathParams: collectionId, query: S.OgcSimpleQuery, responses: { 200: Doc }, errors: [400, 404],
      example: { summary: 'The poles collection', params: { collectionId: 'poles' }, status: 200, after: ['createLayer'] }
    }, async req => {
      parseQuery(S.OgcSimpleQuery, req.query)
      return { body: await ogc.collection(req.service, originOf(req), req.params.collectionId) }
    }),

    route({
      method: 'get', path: '/v1/layers/ogc/collections/:collectionId/items', operationId: 'ogcItems', heavy: 'render', tag: 'ogc', auth: 'bearer', feature: 'ogc',
      summary: 'Features of a collection: bbox, datetime (on updatedAt), limit (clamped to 10000), offset; next/prev links',
      description: 'Needs objects:read; behind the ogc license switch. A GeoJSON FeatureCollection with exact numberMatched, numberReturned, timeStamp and links self, next (while more remain), prev and collection. A limit above 10,000 is clamped, a malformed one or an unknown parameter is 400; unknown collection 404; ETag and If-None-Match (304) as for the exports.',
      pathParams: collectionId, query: S.OgcItemsQuery,
      responses: { 200: Items, 304: { description: 'Not modified' } }, errors: [400, 404],
      example: { summary: 'The first 10 poles', params: { collectionId: 'poles' }, query: { limit: 10 }, status: 200, after: ['createLayer', 'createObjects'] }
    }, async req => {
      const href = `${originOf(req)}/v1/layers/ogc/collections/${req.params.collectionId}`
      return rendered(await ogc.items(req.service, cache, req.params.collectionId, originOf(req) + req.url, href, req.query, conditions(req)), 'application/geo+json')
    }),

    route({
      method: 'get', path: '/v1/layers/ogc/collections/:collectionId/items/:featureId', operationId: 'ogcItem', tag: 'ogc', auth: 'bearer', feature: 'ogc',
      summary: 'One feature of a collection', query: S.OgcSimpleQuery,
      description: 'Needs objects:read; behind the ogc license switch. The object as a GeoJSON Feature with the layer\'s fields and links self and collection. 404 when the collection is unknown or the layer does not select an object with this id.',
      pathParams: { ...collectionId, featureId: { description: 'Object id', schema: { type: 'string' } } },
      responses: { 200: { description: 'the feature', schema: { type: 'object' }, contentType: 'application/geo+json' } }, errors: [400, 404],
      example: { summary: 'One pole', params: { collectionId: 'poles', featureId: '{objectId}' }, status: 200, after: ['createLayer'] }
    }, async req => {
      parseQuery(S.OgcSimpleQuery, req.query)
      return { bytes: await ogc.item(req.service, originOf(req), req.params.collectionId, req.params.featureId), type: 'application/geo+json' }
    }),

    route({
      method: 'get', path: '/v1/layers/ogc/features', operationId: 'ogcFeatures', heavy: 'render', tag: 'ogc', auth: 'bearer', feature: 'ogc',
      summary: 'A layer\'s features as an OGC FeatureCollection (SPEC): layer, limit, offset, bbox; links self and next',
      description: 'Needs objects:read; behind the ogc license switch. The layer parameter (a slug) is required (400 without it, 404 when unknown); limit defaults to 100 and is clamped to 10,000. Answers like the items of a collection, with numberMatched, numberReturned, timeStamp and links self, next and prev.',
      query: S.OgcFeaturesQuery, responses: { 200: Items, 304: { description: 'Not modified' } }, errors: [400, 404],
      example: { summary: 'Poles of a layer around Berlin', query: { layer: 'poles', bbox: '13.3,52.4,13.5,52.6', limit: 10 }, status: 200, after: ['createLayer', 'createObjects'] }
    }, async req => {
      const layer = typeof req.query.layer === 'string' ? req.query.layer : ''
      return rendered(await ogc.items(req.service, cache, layer, originOf(req) + req.url, null, req.query, conditions(req)), 'application/geo+json')
    }),
  ]
}
