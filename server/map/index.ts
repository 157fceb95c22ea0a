import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { route, type Route } from '../http/route.js'
import { PAGE_HTML, PAGE_JS } from './page.js'

// GET /map: a page that shows one layer's vector tiles (MapLibre GL JS, served from our own
// node_modules: no CDN, no external tiles or fonts) over a plain background, fitted to the
// layer's extent, with a feature's properties on click. The page asks for nothing but a token
// (from the address's #token=..., or typed in) and calls the API like any client.

const require = createRequire(import.meta.url)
const maplibreDir = path.dirname(require.resolve('maplibre-gl/dist/maplibre-gl.js'))

interface Asset { operationId: string, summary: string, type: string, file?: string, text?: string }

const ASSETS: Record<string, Asset> = {
  '/map': { operationId: 'mapPage', summary: 'The map page (HTML): a layer\'s vector tiles over a plain background', text: PAGE_HTML, type: 'text/html; charset=utf-8' },
  '/map/page.js': { operationId: 'mapPageScript', summary: 'The map page\'s script', text: PAGE_JS, type: 'text/javascript; charset=utf-8' },
  '/map/maplibre-gl.js': { operationId: 'mapLibreScript', summary: 'MapLibre GL JS, served from the service\'s own node_modules', file: path.join(maplibreDir, 'maplibre-gl.js'), type: 'text/javascript; charset=utf-8' },
  '/map/maplibre-gl.css': { operationId: 'mapLibreStyles', summary: 'MapLibre GL JS\'s styles, served from the service\'s own node_modules', file: path.join(maplibreDir, 'maplibre-gl.css'), type: 'text/css; charset=utf-8' }
}

export function mapRoutes (): Route[] {
  return Object.entries(ASSETS).map(([path, asset]) => {
    let body: Buffer | null = null
    const contentType = asset.type.split(';')[0]
    return route({
      method: 'get', path, operationId: asset.operationId, tag: 'platform', auth: 'none',
      summary: asset.summary,
      description: 'Public and static: the page asks for an access token (#token=... in the address, or typed in) and calls the API like any client. No CDN, no external tiles or fonts.',
      responses: { 200: { description: asset.summary, contentType, schema: { type: 'string' } } },
      example: { summary: asset.summary, status: 200 }
    }, () => {
      body ??= asset.text !== undefined ? Buffer.from(asset.text) : fs.readFileSync(asset.file as string)
      return { headers: { 'Cache-Control': 'no-cache' }, bytes: body, type: asset.type }
    })
  })
}
