import type { Context } from 'koa'
import type { RouteRegistrar } from '../app.js'
import { defineRoute } from '../openapi/registry.js'
import * as layers from '../../lib/layers/index.js'
import { joinBytes } from '../../lib/db.js'
import { service } from '../http/common.js'

const S = layers.schema

const layerKey = { idOrSlug: { description: 'Layer id (UUID) or slug', schema: { type: 'string', minLength: 1, maxLength: 63 } } }
const CacheHeaders = {
  ETag: { description: 'Strong validator: changes exactly when an object the layer selects, or the layer definition, changed', schema: { type: 'string' } },
  'Cache-Control': { description: 'private, max-age=<the layer\'s cacheTtlSeconds>', schema: { type: 'string' } },
  'Content-Encoding': { description: 'gzip when the answer is kept server-side (cacheTtlSeconds > 0) and Accept-Encoding allows gzip; each coding has its own ETag (Vary: Accept-Encoding)', schema: { type: 'string' } }
}
const IfNoneMatch = { 'If-None-Match': { description: 'An ETag from an earlier answer: 304 while it still holds', required: false, schema: { type: 'string' } } }
const NOT_MODIFIED = { description: 'Not modified: the If-None-Match ETag still holds', headers: CacheHeaders }

/** Validators and caching headers; tenant data never sits in a shared cache (private). */
export function sendRendered (ctx: Context, r: layers.Rendered, type: string): void {
  ctx.set('ETag', r.etag)
  ctx.set('Cache-Control', `private, max-age=${r.maxAge}`)
  ctx.set('Vary', r.vary === true ? 'Authorization, Accept-Encoding' : 'Authorization')
  if (r.body === null) { ctx.status = 304; return }
  ctx.status = 200
  ctx.type = type
  if (r.encoding !== undefined) ctx.set('Content-Encoding', r.encoding)
  ctx.body = joinBytes(r.body)
}

/**
 * The start of the API's absolute links (TileJSON and OGC documents): PUBLIC_URL when set (behind
 * a reverse proxy, which this process cannot see), else the scheme and Host the client used.
 */
export const originOf = (ctx: Context): string => service(ctx).config.publicUrl ?? `${ctx.protocol}://${ctx.host}`

export const ifNoneMatch = (ctx: Context): string | undefined => ctx.get('If-None-Match') || undefined

/** If-None-Match, and whether the client takes a gzip body (kept exports are kept gzip-compressed too). */
export const conditions = (ctx: Context): layers.Conditions => ({ ifNoneMatch: ifNoneMatch(ctx), gzip: layers.acceptsGzip(ctx.get('Accept-Encoding')) })

export const registerLayerRoutes: RouteRegistrar = (router, guards, deps) => {
  const cache = deps.renderCache ?? layers.createRenderCache(deps.redis)

  defineRoute(router, guards, {
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
  }, async ctx => {
    const layer = await layers.createLayer(service(ctx), ctx.request.body)
    ctx.status = 201
    ctx.set('Location', `/v1/layers/definitions/${layer.id}`)
    ctx.body = layer
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/definitions', operationId: 'listLayers', tag: 'layers', auth: 'bearer',
    summary: 'List layer definitions (oldest first)', query: S.ListLayersQuery,
    description: 'Needs layers:read. The pagination envelope over the tenant\'s layer definitions, oldest first, each with its definition and effective cacheTtlSeconds.',
    responses: { 200: { description: 'a page of layers', schema: S.LayerList } }, errors: [400],
    example: { summary: 'The layers', query: { limit: 10 }, status: 200, after: ['createLayer'] }
  }, async ctx => {
    ctx.body = await layers.listLayers(service(ctx), ctx.query)
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/definitions/:idOrSlug', operationId: 'getLayer', tag: 'layers', auth: 'bearer',
    summary: 'Read a layer definition by id or slug', pathParams: layerKey,
    description: 'Needs layers:read. A UUID is looked up as the layer id, anything else as its slug. 404 when no layer of the tenant matches.',
    responses: { 200: { description: 'the layer', schema: S.LayerBody } }, errors: [404],
    example: { summary: 'The poles layer, by slug', params: { idOrSlug: 'poles' }, status: 200, after: ['createLayer'] }
  }, async ctx => {
    ctx.body = await layers.getLayer(service(ctx), ctx.params.idOrSlug)
  })

  defineRoute(router, guards, {
    method: 'patch', path: '/v1/layers/definitions/:idOrSlug', operationId: 'patchLayer', tag: 'layers', auth: 'bearer',
    summary: 'Change a layer definition (fields given replace; version +1; every cached rendering of the layer is invalidated)',
    description: 'Needs layers:write. Takes at least one of name, slug, description, definition, cacheTtlSeconds; a bad filter is a 400 naming its path. 409 CONFLICT when the new slug is taken by another layer.',
    pathParams: layerKey, body: S.PatchLayerBody,
    responses: { 200: { description: 'updated', schema: S.LayerBody } }, errors: [404, 409],
    example: { summary: 'Cache its renderings for 2 minutes', params: { idOrSlug: '{layerId}' }, body: { cacheTtlSeconds: 120 }, status: 200 }
  }, async ctx => {
    ctx.body = await layers.patchLayer(service(ctx), ctx.params.idOrSlug, ctx.request.body)
  })

  defineRoute(router, guards, {
    method: 'delete', path: '/v1/layers/definitions/:idOrSlug', operationId: 'deleteLayer', tag: 'layers', auth: 'bearer',
    summary: 'Delete a layer definition',
    description: 'Needs layers:write; frees one layer_count. The definition is removed for good (no soft delete): its tiles, exports and OGC collection answer 404 afterwards. The objects it selected are not touched.',
    pathParams: layerKey, responses: { 204: { description: 'deleted' } }, errors: [404],
    example: { summary: 'Delete a layer', params: { idOrSlug: 'spare-layer' }, status: 204, setup: [{ method: 'post', path: '/v1/layers/definitions', body: { name: 'Spare', slug: 'spare-layer' } }] }
  }, async ctx => {
    await layers.deleteLayer(service(ctx), ctx.params.idOrSlug)
    ctx.status = 204
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/objects', operationId: 'exportLayerGeoJson', tag: 'layers', auth: 'bearer',
    summary: 'A page of a layer (or of all objects) as a GeoJSON FeatureCollection',
    description: 'Needs objects:read. fields=attributes.name gives properties.attributes.name (nested). Features are ordered by createdAt, then id.',
    query: S.ExportQuery, headers: IfNoneMatch,
    responses: { 200: { description: 'the features', schema: S.FeatureCollection, contentType: 'application/geo+json', headers: CacheHeaders }, 304: NOT_MODIFIED },
    errors: [400, 404],
    example: { summary: 'The first 10 poles as GeoJSON', query: { layer: 'poles', limit: 10 }, status: 200, after: ['createLayer', 'createObjects'] }
  }, async ctx => {
    sendRendered(ctx, await layers.featureCollection(service(ctx), cache, ctx.query, conditions(ctx)), 'application/geo+json')
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/objects/stream', operationId: 'streamLayerNdjson', tag: 'layers', auth: 'bearer',
    summary: 'The whole selection as NDJSON: one GeoJSON Feature per line, streamed from a database cursor (no limit; order unspecified)',
    description: 'Needs objects:read. Takes layer, typeId, bbox, fields and asOf like the GeoJSON export but no limit or offset: every selected Feature is streamed from a database cursor in constant memory. Unknown layer 404, bad bbox or fields 400; ETag and If-None-Match (304) work as for the other exports.',
    query: S.StreamQuery, headers: IfNoneMatch,
    responses: { 200: { description: 'one Feature per line', contentType: 'application/x-ndjson', schema: { type: 'string' }, headers: CacheHeaders }, 304: NOT_MODIFIED },
    errors: [400, 404],
    example: { summary: 'Every pole around Berlin as NDJSON', query: { layer: 'poles', bbox: '13.3,52.4,13.5,52.6' }, status: 200, after: ['createLayer', 'createObjects'] }
  }, async ctx => {
    const r = await layers.featureStream(service(ctx), ctx.query, ifNoneMatch(ctx))
    sendRendered(ctx, { etag: r.etag, maxAge: r.maxAge, body: null }, 'application/x-ndjson')
    if (r.stream === null) return
    ctx.status = 200
    ctx.type = 'application/x-ndjson'
    ctx.body = r.stream
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/tiles/:layer.json', operationId: 'getLayerTileJson', tag: 'layers', auth: 'bearer', feature: 'tiles',
    summary: 'TileJSON 3.0 of a layer: tiles URL, bounds, zooms and vector_layers with fields (add the layer to MapLibre or QGIS by this URL)',
    description: 'Needs objects:read; off (403 FEATURE_DISABLED) when the license switches tiles off. The tiles URL is absolute (the origin the request used); bounds are the extent of the selected objects, zooms 0..18, and vector_layers lists the tile properties with their types. Unknown slug 404; cached like the exports (ETag, If-None-Match -> 304).',
    pathParams: { layer: { description: 'Layer slug', schema: { type: 'string', pattern: S.SLUG_PATTERN } } }, headers: IfNoneMatch,
    responses: { 200: { description: 'the TileJSON document', schema: S.TileJson, headers: CacheHeaders }, 304: NOT_MODIFIED }, errors: [404],
    example: { summary: 'TileJSON of the poles layer', params: { layer: 'poles' }, status: 200, after: ['createLayer', 'createObjects'] }
  }, async ctx => {
    sendRendered(ctx, await layers.tileJson(service(ctx), cache, ctx.params.layer, originOf(ctx), conditions(ctx)), 'application/json')
  })

  defineRoute(router, guards, {
    method: 'get', path: '/v1/layers/tiles/:layer/:z/:x/:y', operationId: 'getLayerTile', tag: 'layers', auth: 'bearer', feature: 'tiles',
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
  }, async ctx => {
    const t = layers.parseTile(ctx.params.z, ctx.params.x, ctx.params.y)
    sendRendered(ctx, await layers.tile(service(ctx), cache, ctx.params.layer, t, ctx.query, conditions(ctx)), 'application/vnd.mapbox-vector-tile')
  })
}
