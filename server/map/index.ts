import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import * as layers from '../../lib/layers/index.js'
import { route, type Answer, type Route, type RouteRequest } from '../http/route.js'
import { buildBasemap } from './basemap.js'
import { PAGE_HTML } from './html.js'
import { PAGE_JS } from './page.js'

// GET /map: a page that shows one layer's vector tiles (MapLibre GL JS, served from our own
// node_modules: no CDN, no external tiles or fonts) over a light basemap of Natural Earth land and
// borders (world-atlas, also from node_modules), fitted to the layer's extent, coloured by
// workflow state, redrawn as the change feed reports changes. The page asks for nothing but a
// token (from the address's #token=..., or typed in) and calls the API like any client.

const require = createRequire(import.meta.url)
const maplibreDir = path.dirname(require.resolve('maplibre-gl/dist/maplibre-gl.js'))

interface Asset { operationId: string, summary: string, type: string, build: () => Buffer, schema?: object }

const BASEMAP_SCHEMA = {
  type: 'object',
  required: ['type', 'features'],
  properties: {
    type: { type: 'string', enum: ['FeatureCollection'] },
    features: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'properties', 'geometry'],
        properties: {
          type: { type: 'string', enum: ['Feature'] },
          properties: { type: 'object', properties: { kind: { type: 'string', enum: ['land', 'border'] } } },
          geometry: { type: 'object', description: 'GeoJSON geometry: land as (Multi)Polygon, borders as (Multi)LineString' }
        }
      }
    }
  }
}

const fromText = (text: string) => () => Buffer.from(text)
const fromFile = (file: string) => () => fs.readFileSync(file)

const ASSETS: Record<string, Asset> = {
  '/map': { operationId: 'mapPage', summary: 'The map page (HTML): a layer\'s vector tiles over a basemap of land and borders, kept up to date from the change feed', build: fromText(PAGE_HTML), type: 'text/html; charset=utf-8' },
  '/map/page.js': { operationId: 'mapPageScript', summary: 'The map page\'s script', build: fromText(PAGE_JS), type: 'text/javascript; charset=utf-8' },
  '/map/basemap.json': { operationId: 'mapBasemap', summary: 'The map page\'s basemap: Natural Earth 1:50m land and country borders (world-atlas) as GeoJSON, features `kind` land or border', build: buildBasemap, type: 'application/geo+json', schema: BASEMAP_SCHEMA },
  '/map/maplibre-gl.js': { operationId: 'mapLibreScript', summary: 'MapLibre GL JS, served from the service\'s own node_modules', build: fromFile(path.join(maplibreDir, 'maplibre-gl.js')), type: 'text/javascript; charset=utf-8' },
  '/map/maplibre-gl.css': { operationId: 'mapLibreStyles', summary: 'MapLibre GL JS\'s styles, served from the service\'s own node_modules', build: fromFile(path.join(maplibreDir, 'maplibre-gl.css')), type: 'text/css; charset=utf-8' }
}

/** An asset as kept: both codings (compressed once, off the event loop) and the identity ETag. */
interface Kept { rendering: layers.Rendering, etag: string }

async function keep (asset: Asset): Promise<Kept> {
  const identity = asset.build()
  return { rendering: await layers.encodeRendering(identity), etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 27)}"` }
}

// Each coding is its own representation (lib/layers/encoding.ts): its own ETag, Vary: Accept-Encoding.
function answer (req: RouteRequest, kept: Kept, type: string): Answer {
  const gzip = layers.acceptsGzip(req.header('Accept-Encoding'))
  const etag = gzip ? layers.gzipEtag(kept.etag) : kept.etag
  const headers: Record<string, string> = { 'Cache-Control': 'no-cache', ETag: etag, Vary: 'Accept-Encoding' }
  if (layers.matchesIfNoneMatch(req.header('If-None-Match') || undefined, etag)) return { status: 304, headers }
  if (gzip) headers['Content-Encoding'] = 'gzip'
  return { headers, bytes: gzip ? kept.rendering.gzip : kept.rendering.identity, type }
}

export function mapRoutes (): Route[] {
  return Object.entries(ASSETS).map(([path, asset]) => {
    let kept: Promise<Kept> | null = null
    const contentType = asset.type.split(';')[0]
    return route({
      method: 'get', path, operationId: asset.operationId, tag: 'platform', auth: 'none',
      summary: asset.summary,
      description: 'Public and static: the page asks for an access token (#token=... in the address, or typed in) and calls the API like any client. No CDN, no external tiles or fonts. ' +
        'Built on first use and kept; gzip-compressed when Accept-Encoding allows it; an ETag per coding, If-None-Match answers 304.',
      headers: { 'If-None-Match': { description: 'An ETag from an earlier answer: 304 while it still holds', required: false, schema: { type: 'string' } } },
      responses: {
        200: { description: asset.summary, contentType, schema: asset.schema ?? { type: 'string' } },
        304: { description: 'Not modified: the If-None-Match ETag still holds' }
      },
      example: { summary: asset.summary, status: 200 }
    }, async req => {
      // A failed build is not kept: the next request tries again.
      kept ??= keep(asset).catch(err => { kept = null; throw err })
      return answer(req, await kept, asset.type)
    })
  })
}
