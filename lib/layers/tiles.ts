import type { ServiceContext } from '../context.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import * as exportSql from './export-sql.js'
import { joinBytes } from '../db.js'
import { cached, plan, renderPlannedTile, type Conditions, type Rendered } from './exports.js'
import type { RenderCache } from './cache.js'
import { encodeRendering } from './encoding.js'

// TileJSON 3.0 per layer, and the low-zoom prerender the tiles.prerender job runs.

/** GET /v1/layers/tiles/{layer}.json: what MapLibre and QGIS need to add the layer by one URL. */
export async function tileJson (ctx: ServiceContext, cache: RenderCache | null, slug: string, origin: string, c: Conditions = {}): Promise<Rendered> {
  const pl = await plan(ctx, 'tilejson', { layer: slug }, { parts: [origin] })
  const layer = pl.layer as sql.LayerRow
  return cached(ctx, cache, pl, c, async () => {
    const [e, kinds] = await Promise.all([exportSql.extent(ctx.db, pl.scope), exportSql.attributeKinds(ctx.db, pl.scope)])
    const attrs = pl.fields.attributes === 'all'
      ? kinds.map(k => [`attributes.${k.key}`, k.numeric ? 'Number' : 'String'])
      : pl.fields.attributes.map(p => [`attributes.${p.join('.')}`, kinds.find(k => k.key === p[0] && p.length === 1)?.numeric === true ? 'Number' : 'String'])
    const doc = {
      tilejson: '3.0.0',
      name: layer.name,
      ...(layer.description ? { description: layer.description } : {}),
      tiles: [`${origin}/v1/layers/tiles/${layer.slug}/{z}/{x}/{y}.mvt`],
      scheme: 'xyz',
      minzoom: 0,
      maxzoom: schema.MAX_ZOOM,
      bounds: e.bbox ?? [-180, -85.0511, 180, 85.0511],
      vector_layers: [{
        id: layer.slug,
        description: layer.description ?? layer.name,
        minzoom: 0,
        maxzoom: schema.MAX_ZOOM,
        fields: { id: 'String', typeId: 'String', publicId: 'String', workflowState: 'String', ...Object.fromEntries(attrs) }
      }]
    }
    return Buffer.from(JSON.stringify(doc))
  })
}

/** The zooms the prerender fills: 0..3 (at most 85 tiles, only those over the layer's extent). */
export const PRERENDER_MAX_ZOOM = 3

function tilesOver (bbox: [number, number, number, number], z: number): Array<{ z: number, x: number, y: number }> {
  const n = 2 ** z
  const col = (lon: number) => Math.min(n - 1, Math.max(0, Math.floor((lon + 180) / 360 * n)))
  const row = (lat: number) => {
    const r = Math.max(-85.0511, Math.min(85.0511, lat)) * Math.PI / 180
    return Math.min(n - 1, Math.max(0, Math.floor((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2 * n)))
  }
  const out = []
  for (let x = col(bbox[0]); x <= col(bbox[2]); x++) {
    for (let y = row(bbox[3]); y <= row(bbox[1]); y++) out.push({ z, x, y })
  }
  return out
}

/**
 * Renders the layer's tiles at zooms 0..PRERENDER_MAX_ZOOM over its extent into the shared cache,
 * under the very keys requests compute (same plan), so the next map view is a cache hit.
 * Returns the tiles rendered; 0 when the layer is gone or caching is off for it.
 */
export async function prerenderLayer (ctx: ServiceContext, cache: RenderCache, layerId: string): Promise<number> {
  const layer = await sql.findLayer(ctx.db, ctx.tenantId, layerId, true)
  if (layer === null) return 0
  const probe = await plan(ctx, 'mvt', { layer: layer.id }, { parts: [0, 0, 0] })
  if (probe.ttl === 0) return 0
  const e = await exportSql.extent(ctx.db, probe.scope)
  if (e.bbox === null) return 0
  let n = 0
  for (let z = 0; z <= PRERENDER_MAX_ZOOM; z++) {
    for (const t of tilesOver(e.bbox, z)) {
      const one = await plan(ctx, 'mvt', { layer: layer.id }, { parts: [t.z, t.x, t.y] })
      await cache.set(one.key, await encodeRendering(joinBytes(await renderPlannedTile(ctx, one, t))), one.ttl)
      n++
    }
  }
  return n
}
