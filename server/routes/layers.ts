import type { Readable } from 'node:stream'
import { route, type Answer, type RouteRequest } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as layers from '../../lib/layers/index.js'

const S = layers.schema

const layerKey = { idOrSlug: { description: 'Layer id (UUID) or slug', schema: { type: 'string', minLength: 1, maxLength: 63 } } }
const CacheHeaders = {
  ETag: { description: 'Strong validator: changes exactly when an object the layer selects, or the layer definition, changed', schema: { type: 'string' } },
  'Cache-Control': { description: 'private, max-age=<the layer\'s cacheTtlSeconds>', schema: { type: 'string' } },
  'Content-Encoding': { description: 'gzip when the answer is kept server-side (cacheTtlSeconds > 0) and Accept-Encoding allows gzip; each coding has its own ETag (Vary: Accept-Encoding)', schema: { type: 'string' } }
}
const IfNoneMatch = { 'If-None-Match': { description: 'An ETag from an earlier answer: 304 while it still holds', required: false, schema: { type: 'string' } } }
const NOT_MODIFIED = { description: 'Not modified: the If-None-Match ETag still holds', headers: CacheHeaders }

/** A rendering with its validators and caching headers (304 without a body); tenant data never sits in a shared cache (private). */
export function rendered (r: Pick<layers.Rendered, 'etag' | 'maxAge' | 'vary' | 'encoding'> & { body: layers.Rendered['body'] | Readable }, type: string): Answer {
  const headers: Record<string, string> = {
    ETag: r.etag,
    'Cache-Control': `private, max-age=${r.maxAge}`,
    Vary: r.vary === true ? 'Authorization, Accept-Encoding' : 'Authorization'
  }
  if (r.body === null) return { status: 304, headers }
  if (r.encoding !== undefined) headers['Content-Encoding'] = r.encoding
  return { headers, bytes: r.body, type }
}

/**
 * The start of the API's absolute links (TileJSON and OGC documents): PUBLIC_URL when set (behind
 * a reverse proxy, which this process cannot see), else the scheme and Host the client used.
 */
export const originOf = (req: RouteRequest): string => req.service.config.publicUrl ?? req.origin

export const ifNoneMatch = (req: RouteRequest): string | undefined => req.header('If-None-Match') || undefined

/** If-None-Match, and whether the client takes a gzip body (kept exports are kept gzip-compressed too). */
export const conditions = (req: RouteRequest): layers.Conditions => ({ ifNoneMatch: ifNoneMatch(req), gzip: layers.acceptsGzip(req.header('Accept-Encoding')) })

export const layerRoutes: RouteModule = (deps) => {
  const cache = deps.renderCache

  return [
    route({
      method: 'post', path: '/v1/layers/definitions', operationId: 'createLayer', tag: 'layers', auth: 'bearer',
      summary: 'Define a layer: a named, reusable selection of objects (filters) and the fields it exports',
      description: 'definition.filters: typeId, workflowState, attributes (name -> value equality), bbox, query (filters of the query DSL). ' +
        'A bad filter is a 400 naming its path, e.g. definition.filters.query[0].operator. 409 CONFLICT when the slug is taken.',
      body: S.CreateLayerBody,
      responses: { 201: { description: 'created', schema: S.LayerBody, headers: { Location: { description: 'The new layer', schema: { type: 'string' } } } } },
      errors: [409],
      example: {
        summary: 'A layer of poles with their public id, height and state',
        body: { name: 'Poles', slug: 'poles', description: 'Every utility pole', definition: { filters: { typeId: '{typeId}' }, fields: ['publicId', 'attributes.height', 'workflowState'] }, cacheTtlSeconds: 60 },
        status: 201, saves: { layerId: 'id' }
      }
    }, async req => {
      const layer = await layers.createLayer(req.service, req.body)
      return { status: 201, headers: { Location: `/v1/layers/definitions/${layer.id}` }, body: layer }
    }),

    route({
      method: 'get', path: '/v1/layers/definitions', operationId: 'listLayers', tag: 'layers', auth: 'bearer',
      summary: 'List layer definitions (oldest first)', query: S.ListLayersQuery,
      description: 'Needs layers:read. The pagination envelope over the tenant\'s layer definitions, oldest first, each with its definition and effective cacheTtlSeconds.',
      responses: { 200: { description: 'a page of layers', schema: S.LayerList } }, errors: [400],
      example: { summary: 'The layers', query: { limit: 10 }, status: 200, after: ['createLayer'] }
    }, async req => ({ body: await layers.listLayers(req.service, req.query) })),

    route({
      method: 'get', path: '/v1/layers/definitions/:idOrSlug', operationId: 'getLayer', tag: 'layers', auth: 'bearer',
      summary: 'Read a layer definition by id or slug', pathParams: layerKey,
      description: 'Needs layers:read. A UUID is looked up as the layer id, anything else as its slug. 404 when no layer of the tenant matches.',
      responses: { 200: { description: 'the layer', schema: S.LayerBody } }, errors: [404],
      example: { summary: 'The poles layer, by slug', params: { idOrSlug: 'poles' }, status: 200, after: ['createLayer'] }
    }, async req => ({ body: await layers.getLayer(req.service, req.params.idOrSlug) })),

    route({
      method: 'patch', path: '/v1/layers/definitions/:idOrSlug', operationId: 'patchLayer', tag: 'layers', auth: 'bearer',
      summary: 'Change a layer definition (fields given replace; version +1; every cached rendering of the layer is invalidated)',
      description: 'Needs layers:write. Takes at least one of name, slug, description, definition, cacheTtlSeconds; a bad filter is a 400 naming its path. 409 CONFLICT when the new slug is taken by another layer.',
      pathParams: layerKey, body: S.PatchLayerBody,
      responses: { 200: { description: 'updated', schema: S.LayerBody } }, errors: [404, 409],
      example: { summary: 'Cache its renderings for 2 minutes', params: { idOrSlug: '{layerId}' }, body: { cacheTtlSeconds: 120 }, status: 200 }
    }, async req => ({ body: await layers.patchLayer(req.service, req.params.idOrSlug, req.body) })),

    route({
      method: 'delete', path: '/v1/layers/definitions/:idOrSlug', operationId: 'deleteLayer', tag: 'layers', auth: 'bearer',
      summary: 'Delete a layer definition',
      description: 'Needs layers:write; frees one layer_count. The definition is removed for good (no soft delete): its tiles, exports and OGC collection answer 404 afterwards. The objects it selected are not touched.',
      pathParams: layerKey, responses: { 204: { description: 'deleted' } }, errors: [404],
      example: { summary: 'Delete a layer', params: { idOrSlug: 'spare-layer' }, status: 204, setup: [{ method: 'post', path: '/v1/layers/definitions', body: { name: 'Spare', slug: 'spare-layer' } }] }
    }, async req => {
      await layers.deleteLayer(req.service, req.params.idOrSlug)
      return { status: 204 }
    }),

    route({
      method: 'get', path: '/v1/layers/objects', operationId: 'exportLayerGeoJson', heavy: 'render', tag: 'layers', auth: 'bearer',
      summary: 'A page of a layer (or of all objects) as a GeoJSON FeatureCollection',
      description: 'Needs objects:read. fields=attributes.name gives properties.attributes.name (nested). Features are ordered by createdAt, then id.',
      query: S.ExportQuery, headers: IfNoneMatch,
      responses: { 200: { description: 'the features', schema: S.FeatureCollection, contentType: 'application/geo+json', headers: CacheHeaders }, 304: NOT_MODIFIED },
      errors: [400, 404],
      example: { summary: 'The first 10 poles as GeoJSON', query: { layer: 'poles', limit: 10 }, status: 200, after: ['createLayer', 'createObjects'] }
    }, async req => {
      return rendered(await layers.featureCollection(req.service, cache, req.query, conditions(req)), 'application/geo+json')
    }),

    route({
      method: 'get', path: '/v1/layers/objects/stream', operationId: 'streamLayerNdjson', heavy: 'request', tag: 'layers', auth: 'bearer',
      summary: 'The whole selection as NDJSON: one GeoJSON Feature per line, streamed from a database cursor (no limit; order unspecified)',
      description: 'Needs objects:read. Takes layer, typeId, bbox, fields and asOf like the GeoJSON export but no limit or offset: every selected Feature is streamed from a database cursor in constant memory. Unknown layer 404, bad bbox or fields 400; ETag and If-None-Match (304) work as for the other exports.',
      query: S.StreamQuery, headers: IfNoneMatch,
      responses: { 200: { description: 'one Feature per line', contentType: 'application/x-ndjson', schema: { type: 'string' }, headers: CacheHeaders }, 304: NOT_MODIFIED },
      errors: [400, 404],
      example: { summary: 'Every pole around Berlin as NDJSON', query: { layer: 'poles', bbox: '13.3,52.4,13.5,52.6' }, status: 200, after: ['createLayer', 'createObjects'] }
    }, async req => {
      const r = await layers.featureStream(req.service, req.query, ifNoneMatch(req))
      return rendered({ etag: r.etag, maxAge: r.maxAge, body: r.stream }, 'application/x-ndjson')
    }),

    route({
      method: 'get', path: '/v1/layers/tiles/:layer.json', operationId: 'getLayerTileJson', tag: 'layers', auth: 'bearer', feature: 'tiles',
      summary: 'TileJSON 3.0 of a layer: tiles URL, bounds, zooms and vector_layers with fields (add the layer to MapLibre or QGIS by this URL)',
      description: 'Needs objects:read; off (403 FEATURE_DISABLED) when the license switches tiles off. The tiles URL is absolute (the origin the request used); bounds are the extent of the selected objects, zooms 0..18, and vector_layers lists the tile properties with their types. Unknown slug 404; cached like the exports (ETag, If-None-Match -> 304).',
      pathParams: { layer: { description: 'Layer slug', schema: { type: 'string', pattern: S.SLUG_PATTERN } } }, headers: IfNoneMatch,
      responses: { 200: { description: 'the TileJSON document', schema: S.TileJson, headers: CacheHeaders }, 304: NOT_MODIFIED }, errors: [404],
      example: { summary: 'TileJSON of the poles layer', params: { layer: 'poles' }, status: 200, after: ['createLayer', 'createObjects'] }
    }, async req => {
      return rendered(await layers.tileJson(req.service, cache, req.params.layer, originOf(req), conditions(req)), 'application/json')
    }),

    route({
      method: 'get', path: '/v1/layers/tiles/:layer/:z/:x/:y', operationId: 'getLayerTile', heavy: 'render', tag: 'layers', auth: 'bearer', feature: 'tiles',
      summary: 'A Mapbox Vector Tile of a layer (extent 4096, buffer 64; y may end in .mvt or .pbf); an empty tile is 200 with an empty body',
      description: 'Properties: id, typeId, publicId, workflowState and each selected attribute as attributes.<name> (objects and arrays as JSON text). ' +
        'The tile layer is named by the slug. z is 0..18; x and y 0..2^z-1 (400 otherwise).',
      pathParams: {
        layer: { description: 'Layer slug', schema: { type: 'string', pattern: S.SLUG_PATTERN } },
        z: { description: 'Zoom 0..18', schema: { type: 'integer', minimum: 0, maximum: S.MAX_ZOOM } },
        x: { description: 'Column 0..2^z-1', schema: { type: 'integer', minimum: 0 } },
        y: { description: 'Row 0..2^z-1, optionally with .mvt or .pbf', schema: { type: 'string', pattern: '^\\d+(\\.(mvt|pbf))?$' } }
      },
      query: S.TileQuery, headers: IfNoneMatch,
      responses: { 200: { description: 'the tile', contentType: 'application/vnd.mapbox-vector-tile', schema: { type: 'string', format: 'binary' }, headers: CacheHeaders }, 304: NOT_MODIFIED },
      errors: [400, 404],
      example: { summary: 'The world tile of the poles layer', params: { layer: 'poles', z: 0, x: 0, y: '0.mvt' }, status: 200, after: ['createLayer', 'createObjects'] }
    }, async req => {
      const t = layers.parseTile(req.params.z, req.params.x, req.params.y)
      return rendered(await layers.tile(req.service, cache, req.params.layer, t, req.query, conditions(req)), 'application/vnd.mapbox-vector-tile')
    }),
  ]
}
