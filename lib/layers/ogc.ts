import type { ServiceContext } from '../context.js'
import { withCallerCost } from '../db.js'
import { AppError, notFound, validationError } from '../errors.js'
import { parseQuery } from '../validation.js'
import * as access from '../access/index.js'
import * as queries from '../queries/index.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import * as exportSql from './export-sql.js'
import { cached, plan, type Conditions, type Rendered } from './exports.js'
import { layerFilter, whereSql } from './selection.js'
import type { RenderCache } from './cache.js'

// OGC API - Features Part 1 (Core, GeoJSON, OpenAPI 3.0) over the tenant's layers: one
// collection per layer. `base` is the API's own origin + /v1/layers/ogc (links are absolute).
// Where servers commonly slip: every link has rel and type; the landing page
// links service-desc, conformance and data; a limit above the maximum is clamped; an unknown
// parameter is 400; numberMatched is exact; next/prev page by offset over a total order.

const JSON_TYPE = 'application/json'
const GEOJSON = 'application/geo+json'
const OPENAPI = 'application/vnd.oai.openapi+json;version=3.0'
const CRS84 = 'http://www.opengis.net/def/crs/OGC/1.3/CRS84'
export const CONFORMANCE = [
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core',
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson',
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30'
]

interface Link { href: string, rel: string, type: string, title?: string }
const link = (href: string, rel: string, type: string, title?: string): Link => ({ href, rel, type, ...(title ? { title } : {}) })

export async function landingPage (ctx: ServiceContext, origin: string) {
  await access.authorize(ctx, 'objects', 'read')
  const base = `${origin}/v1/layers/ogc`
  return {
    title: 'Spatial platform layers',
    description: "OGC API - Features over this tenant's layer definitions",
    links: [
      link(base, 'self', JSON_TYPE, 'this document'),
      link(`${origin}/openapi/v1.json`, 'service-desc', OPENAPI, 'the API definition'),
      link(`${base}/conformance`, 'conformance', JSON_TYPE, 'conformance classes'),
      link(`${base}/collections`, 'data', JSON_TYPE, 'the layers')
    ]
  }
}

export async function conformance (ctx: ServiceContext, origin: string) {
  await access.authorize(ctx, 'objects', 'read')
  return { conformsTo: CONFORMANCE, links: [link(`${origin}/v1/layers/ogc/conformance`, 'self', JSON_TYPE)] }
}

async function describe (ctx: ServiceContext, base: string, layer: sql.LayerRow) {
  const e = await exportSql.extent(ctx.db, { tenantId: ctx.tenantId, where: whereSql(layerFilter(layer.definition)) })
  const href = `${base}/collections/${layer.slug}`
  return {
    id: layer.slug,
    title: layer.name,
    ...(layer.description ? { description: layer.description } : {}),
    itemType: 'feature',
    crs: [CRS84],
    extent: {
      spatial: { bbox: [e.bbox ?? [-180, -90, 180, 90]], crs: CRS84 },
      temporal: { interval: [[e.firstUpdate, e.lastUpdate]], trs: 'http://www.opengis.net/def/uom/ISO-8601/0/Gregorian' }
    },
    links: [link(href, 'self', JSON_TYPE), link(`${href}/items`, 'items', GEOJSON, 'the features')]
  }
}

const MAX_COLLECTIONS = 1000

export async function collections (ctx: ServiceContext, origin: string) {
  await access.authorize(ctx, 'objects', 'read')
  const base = `${origin}/v1/layers/ogc`
  const { rows } = await sql.listLayers(ctx.db, ctx.tenantId, MAX_COLLECTIONS, 0)
  return {
    collections: await Promise.all(rows.map(l => describe(ctx, base, l))),
    links: [link(`${base}/collections`, 'self', JSON_TYPE)]
  }
}

async function layerBySlug (ctx: ServiceContext, slug: string): Promise<sql.LayerRow> {
  return (await sql.findLayer(ctx.db, ctx.tenantId, slug, false)) ?? notFound('collection', slug)
}

export async function collection (ctx: ServiceContext, origin: string, slug: string) {
  await access.authorize(ctx, 'objects', 'read')
  return describe(ctx, `${origin}/v1/layers/ogc`, await layerBySlug(ctx, slug))
}

/** OGC: a limit above the maximum is clamped, not refused (a malformed one is still 400). */
function clampLimit (query: Record<string, unknown>): Record<string, unknown> {
  const raw = Array.isArray(query.limit) ? query.limit[query.limit.length - 1] : query.limit
  if (typeof raw === 'string' && /^\d+$/.test(raw) && Number(raw) > schema.OGC_MAX_LIMIT) return { ...query, limit: String(schema.OGC_MAX_LIMIT) }
  return query
}

/** datetime (an instant, or a/b with `..` for an open end) on updatedAt. */
function datetimeFilter (raw: string | undefined): queries.FilterNode | null {
  if (raw === undefined) return null
  const parts = raw.split('/')
  if (parts.length > 2 || parts.every(p => p === '..' || p === '')) throw validationError('datetime', 'must be an RFC 3339 instant or an interval a/b (.. for an open end)')
  const f = parts.length === 1
    ? [{ field: 'updatedAt', operator: 'equals', value: parts[0] }]
    : [
        ...(parts[0] === '..' || parts[0] === '' ? [] : [{ field: 'updatedAt', operator: 'gte', value: parts[0] }]),
        ...(parts[1] === '..' || parts[1] === '' ? [] : [{ field: 'updatedAt', operator: 'lte', value: parts[1] }])
      ]
  try {
    return queries.parseFilters(f, 'datetime')
  } catch {
    throw validationError('datetime', 'must be an RFC 3339 instant or an interval a/b (.. for an open end)')
  }
}

interface ItemsQuery { limit: number, offset: number, bbox?: string, datetime?: string, layer?: string }

function pageUrl (self: string, q: ItemsQuery, offset: number): string {
  const u = new URL(self)
  u.search = ''
  if (q.layer !== undefined) u.searchParams.set('layer', q.layer)
  u.searchParams.set('limit', String(q.limit))
  u.searchParams.set('offset', String(offset))
  if (q.bbox !== undefined) u.searchParams.set('bbox', q.bbox)
  if (q.datetime !== undefined) u.searchParams.set('datetime', q.datetime)
  return u.toString()
}

/**
 * A page of a collection's items with numberMatched (exact), numberReturned, timeStamp and links.
 * `self` is the request URL; `collectionHref` is null for SPEC's /v1/layers/ogc/features.
 */
export async function items (ctx: ServiceContext, cache: RenderCache | null, slug: string, self: string, collectionHref: string | null,
  query: Record<string, unknown>, c: Conditions = {}): Promise<Rendered> {
  const q = parseQuery<ItemsQuery>(collectionHref === null ? schema.OgcFeaturesQuery : schema.OgcItemsQuery, clampLimit(query))
  const pl = await plan(ctx, 'ogc-items', { layer: slug, bbox: q.bbox }, { filter: datetimeFilter(q.datetime), parts: [q.limit, q.offset, q.datetime ?? null, self] })
  if (pl.layer === null) throw new AppError('BAD_REQUEST', 'layer is required', { field: 'layer' })
  return cached(ctx, cache, pl, c, async () => {
    // One after the other: under the statement bound both run on its one connection.
    const [page, matched] = await withCallerCost(ctx, async db => [
      await exportSql.featurePage(db, pl.scope, pl.fields, q.limit, q.offset),
      await exportSql.countFeatures(db, pl.scope)
    ] as const)
    // The page holds what the count leaves from the offset, up to the limit (one order, one transaction).
    const returned = Math.max(0, Math.min(q.limit, matched - q.offset))
    const links = [link(pageUrl(self, q, q.offset), 'self', GEOJSON, 'this page')]
    if (q.offset + returned < matched) links.push(link(pageUrl(self, q, q.offset + q.limit), 'next', GEOJSON, 'next page'))
    if (q.offset > 0) links.push(link(pageUrl(self, q, Math.max(0, q.offset - q.limit)), 'prev', GEOJSON, 'previous page'))
    if (collectionHref !== null) links.push(link(collectionHref, 'collection', JSON_TYPE, 'the collection'))
    const head = { type: 'FeatureCollection', numberMatched: matched, numberReturned: returned, timeStamp: new Date().toISOString(), links }
    return [Buffer.from(`${JSON.stringify(head).slice(0, -1)},"features":`), ...page, Buffer.from('}')]
  })
}

export async function item (ctx: ServiceContext, origin: string, slug: string, featureId: string) {
  const pl = await plan(ctx, 'ogc-item', { layer: slug })
  const f = /^[0-9a-f-]{36}$/i.test(featureId) ? await exportSql.featureById(ctx.db, pl.scope, pl.fields, featureId) : null
  if (f === null) notFound('feature', featureId)
  const href = `${origin}/v1/layers/ogc/collections/${slug}`
  const links = [link(`${href}/items/${featureId}`, 'self', GEOJSON), link(href, 'collection', JSON_TYPE)]
  return `${f.slice(0, -1)},"links":${JSON.stringify(links)}}`
}
