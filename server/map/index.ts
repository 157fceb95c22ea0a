import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import type Router from '@koa/router'
import { PAGE_HTML, PAGE_JS } from './page.js'

// GET /map: a page that shows one layer's vector tiles (MapLibre GL JS, served from our own
// node_modules: no CDN, no external tiles or fonts) over a plain background, fitted to the
// layer's extent, with a feature's properties on click. The page asks for nothing but a token
// (from the address's #token=..., or typed in) and calls the API like any client.

const require = createRequire(import.meta.url)
const maplibreDir = path.dirname(require.resolve('maplibre-gl/dist/maplibre-gl.js'))

const ASSETS: Record<string, { file: string, type: string } | { text: string, type: string }> = {
  '/map': { text: PAGE_HTML, type: 'text/html; charset=utf-8' },
  '/map/page.js': { text: PAGE_JS, type: 'text/javascript; charset=utf-8' },
  '/map/maplibre-gl.js': { file: path.join(maplibreDir, 'maplibre-gl.js'), type: 'text/javascript; charset=utf-8' },
  '/map/maplibre-gl.css': { file: path.join(maplibreDir, 'maplibre-gl.css'), type: 'text/css; charset=utf-8' }
}

export function registerMapPage (router: Router): void {
  for (const [route, asset] of Object.entries(ASSETS)) {
    let body: Buffer | null = null
    router.get(route, ctx => {
      body ??= 'text' in asset ? Buffer.from(asset.text) : fs.readFileSync(asset.file)
      ctx.type = asset.type
      ctx.set('Cache-Control', 'no-cache')
      ctx.body = body
    })
  }
}
