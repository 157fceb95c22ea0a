import type { ServiceContext } from '../context.js'
import { AppError, validationError } from '../errors.js'
import { parseQuery } from '../validation.js'
import * as access from '../access/index.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import * as exportSql from './export-sql.js'
import { ALL_FIELDS, and, layerFilter, parseFields, requestFilter, whereSql, type FieldSelection } from './selection.js'
import { cachedLayer } from './definitions.js'
import { changeCount } from './changes.js'
import { matchesIfNoneMatch, renderKey, type RenderCache } from './cache.js'
import { encodeRendering } from './encoding.js'
import type { FilterNode, Fragment } from '../queries/index.js'
import { joinBytes, withCallerCost } from '../db.js'
import { renderCacheLookupsTotal } from '../metrics.js'

// Exports of a layer's selection: GeoJSON pages, the NDJSON stream's statement, tiles. Each
// request is first "planned": the layer, the selection, and the cache key / ETag built from
// everything the answer depends on (README "Caching"); only then is anything rendered.

export interface ExportParams {
  layer?: string
  typeId?: string
  bbox?: string
  fields?: string
  asOf?: string
}

export interface Plan {
  /** What is exported (mvt, geojson, tilejson, ogc-items...): part of the key, and the cache metrics' label. */
  kind: string
  layer: sql.LayerRow | null
  scope: exportSql.Scope
  fields: FieldSelection
  /** Cache-Control max-age and the server-side lifetime; 0: nothing is kept. */
  ttl: number
  key: string
  etag: string
  /** The ETag of the gzip coding, which exists only for what is kept (encoding.ts). */
  gzipEtag: string
}

/**
 * What a route sends: 304 (body null) or the rendering, with its validators; `encoding` gzip:
 * the body is gzip (Content-Encoding); `vary`: the answer depends on Accept-Encoding (it is kept
 * in both codings), which the route says in Vary.
 */
export interface Rendered { etag: string, maxAge: number, body: Body | null, encoding?: 'gzip', vary?: boolean }

/**
 * A body: one buffer, or the pieces of one sent in order (a cold tile as it came from the
 * database, lib/db `preparedBytes`; a server writes them in one writev; `joinBytes` makes one buffer).
 */
export type Body = Buffer | readonly Buffer[]

/** What a request asks of a cached export: its If-None-Match, and whether it takes a gzip body (encoding.ts `acceptsGzip`). */
export interface Conditions { ifNoneMatch?: string, gzip?: boolean }

/** The object type ids whose changes can change this selection, or null for any type. */
function typeBuckets (layer: sql.LayerRow | null, typeId: string | undefined): string[] | null {
  const ids = [layer?.definition.filters?.typeId, typeId].filter((t): t is string => t !== undefined)
  return ids.length === 0 ? null : [...new Set(ids)]
}

// A layer's own filter tree and fields, parsed once per (cached, immutable) row.
interface CompiledLayer { filter: FilterNode | null, where: Fragment, fields: FieldSelection }
const compiledLayers = new WeakMap<sql.LayerRow, CompiledLayer>()

function compiled (layer: sql.LayerRow): CompiledLayer {
  let c = compiledLayers.get(layer)
  if (c === undefined) {
    const filter = layerFilter(layer.definition)
    c = { filter, where: whereSql(filter), fields: parseFields(layer.definition.fields ?? [], i => `definition.fields[${i}]`) }
    compiledLayers.set(layer, c)
  }
  return c
}

/**
 * The layer (by slug or id; 404 when unknown) and ONE filter tree of its filters, the request's
 * typeId and bbox and `extra` (README "Selection"). The caller has authorized the read.
 */
export async function selection (ctx: ServiceContext, p: { layer?: string, typeId?: string, bbox?: string }, extra: FilterNode | null = null): Promise<{ layer: sql.LayerRow | null, own: CompiledLayer | null, filter: FilterNode | null }> {
  const layer = p.layer === undefined ? null : await cachedLayer(ctx, p.layer)
  const own = layer === null ? null : compiled(layer)
  return { layer, own, filter: and([own?.filter ?? null, requestFilter(p), extra]) }
}

/**
 * Resolves the layer and the selection and derives the cache key. Order matters: the change
 * counter is read BEFORE any rendering, so a rendering is never older than the key it is kept
 * under (a change in between only makes the entry newer than its key; the next request, seeing
 * the higher counter, renders again).
 */
export async function plan (ctx: ServiceContext, kind: string, p: ExportParams, extra: { filter?: FilterNode | null, parts?: unknown[] } = {}): Promise<Plan> {
  // Exports need objects:read (docs/behaviour.md "Authentication and roles"). All of the caller's
  // permissions shape the answer, so they are checked here, before any cache lookup or 304.
  await access.authorize(ctx, 'objects', 'read')
  const { layer, own, filter } = await selection(ctx, p, extra.filter)
  const fields = p.fields !== undefined ? parseFields(p.fields.split(',').map(s => s.trim()), () => 'fields') : own?.fields ?? ALL_FIELDS
  const changes = await changeCount(ctx, typeBuckets(layer, p.typeId))
  const ttl = layer?.cache_ttl_seconds ?? ctx.config.layerCacheTtlSeconds
  const { key, etag, gzipEtag } = renderKey(ctx.tenantId, [
    kind, layer?.id ?? null, layer?.version ?? null, changes, p.typeId ?? null, p.bbox ?? null, fields, p.asOf ?? null, ...(extra.parts ?? [])
  ])
  return { kind, layer, scope: { tenantId: ctx.tenantId, asOf: p.asOf, where: own !== null && filter === own.filter ? own.where : whereSql(filter) }, fields, ttl, key, etag, gzipEtag }
}

/**
 * The conditional-request and cache discipline shared by every cached export: 304 when the
 * client holds the ETag of the coding it would get; else the kept rendering in that coding;
 * else enter the request's heavy lane (ServiceContext.heavyLane), render, compress once, keep
 * both codings (for at most the TTL), send. `gzip`: the client's Accept-Encoding allows gzip
 * (encoding.ts `acceptsGzip`); only kept renderings have a gzip coding.
 */
export async function cached (ctx: ServiceContext, cache: RenderCache | null, pl: Plan, c: Conditions, render: () => Promise<Body>): Promise<Rendered> {
  if (cache === null || pl.ttl === 0) {
    const head = { etag: pl.etag, maxAge: pl.ttl }
    if (matchesIfNoneMatch(c.ifNoneMatch, pl.etag)) return { ...head, body: null }
    await ctx.heavyLane?.()
    return { ...head, body: await render() }
  }
  const head: Omit<Rendered, 'body'> = c.gzip === true
    ? { etag: pl.gzipEtag, maxAge: pl.ttl, encoding: 'gzip', vary: true }
    : { etag: pl.etag, maxAge: pl.ttl, vary: true }
  if (matchesIfNoneMatch(c.ifNoneMatch, head.etag)) return { ...head, body: null }
  const hit = await cache.get(pl.key, c.gzip === true ? 'gzip' : 'identity')
  renderCacheLookupsTotal.inc({ kind: pl.kind, result: hit === undefined ? 'miss' : 'hit' })
  if (hit !== undefined) return { ...head, body: hit }
  await ctx.heavyLane?.()
  const kept = await encodeRendering(joinBytes(await render()))
  await cache.set(pl.key, kept, pl.ttl)
  return { ...head, body: c.gzip === true ? kept.gzip : kept.identity }
}

export interface PageQuery extends ExportParams { limit: number, offset: number }

const COLLECTION_HEAD = Buffer.from('{"type":"FeatureCollection","features":')
const CLOSE = Buffer.from('}')

/** GET /v1/layers/objects: one page of the selection as a GeoJSON FeatureCollection. */
export async function featureCollection (ctx: ServiceContext, cache: RenderCache | null, query: Record<string, unknown>, c: Conditions = {}): Promise<Rendered> {
  const q = parseQuery<PageQuery>(schema.ExportQuery, query)
  const pl = await plan(ctx, 'geojson', q, { parts: [q.limit, q.offset] })
  return cached(ctx, cache, pl, c, async () => {
    const page = await withCallerCost(ctx, db => exportSql.featurePage(db, pl.scope, pl.fields, q.limit, q.offset))
    return [COLLECTION_HEAD, ...page, CLOSE]
  })
}

export interface TileCoordinates { z: number, x: number, y: number }

/** z/x/y as path text (y may carry .mvt or .pbf) -> integers in range; 400 naming the parameter. */
export function parseTile (z: string, x: string, y: string): TileCoordinates {
  const int = (v: string, name: string) => {
    if (!/^\d{1,9}$/.test(v)) throw validationError(name, 'must be a non-negative integer')
    return Number(v)
  }
  const zoom = int(z, 'z')
  if (zoom > schema.MAX_ZOOM) throw validationError('z', `must be 0..${schema.MAX_ZOOM}`)
  const n = 2 ** zoom
  const col = int(x, 'x')
  const row = int(y.replace(/\.(mvt|pbf)$/, ''), 'y')
  if (col >= n) throw validationError('x', `must be 0..${n - 1} at zoom ${zoom}`)
  if (row >= n) throw validationError('y', `must be 0..${n - 1} at zoom ${zoom}`)
  return { z: zoom, x: col, y: row }
}

/** GET /v1/layers/tiles/{layer}/{z}/{x}/{y}: a Mapbox Vector Tile; an empty tile is an empty body. */
export async function tile (ctx: ServiceContext, cache: RenderCache | null, layer: string, t: TileCoordinates, query: Record<string, unknown>, c: Conditions = {}): Promise<Rendered> {
  const q = parseQuery<{ asOf?: string }>(schema.TileQuery, query)
  const pl = await plan(ctx, 'mvt', { layer, asOf: q.asOf }, { parts: [t.z, t.x, t.y] })
  return cached(ctx, cache, pl, c, () => renderPlannedTile(ctx, pl, t))
}

export function renderPlannedTile (ctx: ServiceContext, pl: Plan, t: TileCoordinates): Promise<Buffer[]> {
  if (pl.layer === null) throw new AppError('BAD_REQUEST', 'a tile needs a layer')
  return exportSql.renderTile(ctx.db, pl.scope, pl.fields, { ...t, layerName: pl.layer.slug })
}
