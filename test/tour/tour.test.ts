import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import { VectorTile } from '@mapbox/vector-tile'
import { PbfReader as Pbf } from 'pbf'
import { newTenant } from '../support/harness.js'
import { startService, type Service } from '../support/service.js'
import { externalRequests, launchChromium } from '../support/browser.js'

// README's tour, over HTTP against the service as `npm start` runs it: in PostgreSQL mode (API
// and worker processes on TEST_DATABASE_URL; part of `npm test`) or, with TOUR_MODE=embedded
// (`npm run test:embedded`), in embedded mode (one process on PGlite in a fresh data folder).
// Every module's main path: object types, objects (write, conflict, history, as-of, batch),
// workflows with guards, relations, queries (spatial, attribute, aggregation, graph), layers
// (GeoJSON, NDJSON, tiles, TileJSON, OGC), audit proof, automation (event rule -> webhook, a
// schedule), permission policy, GraphQL.

// A kept-alive socket the server closed while idle (its 5 s keep-alive) fails the next request
// before it is sent: that one is sent again, on a new socket.
async function fetchOnce (url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init)
  } catch (err) {
    if ((err as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw err
    return fetch(url, init)
  }
}

const MODE = process.env.TOUR_MODE === 'embedded' ? 'embedded' : 'postgres'

describe(`README tour (${MODE} mode)`, { timeout: 1_800_000 }, () => {
  let svc: Service
  let token = ''
  const tenant = newTenant('tour')
  const received: Array<{ url: string, body: any }> = []
  let receiver: http.Server
  let receiverPort = 0
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tour-'))

  async function call (method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number, body: any, text: string, headers: Headers }> {
    const r = await fetchOnce(svc.base + p, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
    const text = await r.text()
    let parsed: any = null
    try { parsed = JSON.parse(text) } catch { /* not JSON */ }
    return { status: r.status, body: parsed, text, headers: r.headers }
  }
  const get = (p: string, h?: Record<string, string>) => call('GET', p, undefined, h)
  const post = (p: string, b: unknown = {}, h?: Record<string, string>) => call('POST', p, b, h)
  const patch = (p: string, b: unknown, h?: Record<string, string>) => call('PATCH', p, b, h)

  async function until<T> (what: string, fn: () => Promise<T | undefined | null | false>, ms = 30_000): Promise<T> {
    const end = Date.now() + ms
    for (;;) {
      const v = await fn()
      if (v !== undefined && v !== null && v !== false) return v
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
      await new Promise(resolve => setTimeout(resolve, 250))
    }
  }

  before(async () => {
    receiver = http.createServer((req, res) => {
      let b = ''
      req.on('data', c => { b += c })
      req.on('end', () => {
        received.push({ url: req.url ?? '', body: b === '' ? null : JSON.parse(b) })
        res.statusCode = req.url === '/fail' ? 500 : 200
        res.end()
      })
    })
    await new Promise<void>(resolve => receiver.listen(0, '127.0.0.1', resolve))
    receiverPort = (receiver.address() as { port: number }).port
    svc = await startService(MODE, { dataDir })
    // The token command, as README uses it, for this mode's secret.
    token = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/token.ts', '--tenant', tenant, '--roles', 'owner'],
      { env: { ...process.env, ...svc.env }, encoding: 'utf8' }).trim()
  })

  after(async () => {
    await svc?.stop()
    receiver?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  let TYPE = ''
  let OBJ = ''
  let POLE = ''

  it('is ready and says which mode it runs in', async () => {
    const r = await get('/v1/health/ready')
    assert.equal(r.status, 200, r.text)
    assert.equal(r.body.mode, MODE)
    if (MODE === 'embedded') assert.match(r.body.note, /DATABASE_URL/)
    assert.equal((await get('/v1/auth/me')).body.tenant, tenant)
  })

  it('creates and publishes an object type', async () => {
    const r = await post('/v1/object-types', {
      key: 'pole', name: 'Utility pole',
      attributeSchema: { type: 'object', required: ['material'], properties: { material: { type: 'string' }, height: { type: 'number', minimum: 0 } } },
      geometry: { required: true, types: ['Point'] },
      validationRules: [{ name: 'tall-enough', rule: { '>=': [{ var: 'attributes.height' }, 3] }, message: 'a pole is at least 3 m tall' }],
      publicIdTemplate: 'POLE-{{year}}-{{seq:5}}'
    })
    assert.equal(r.status, 201, r.text)
    TYPE = r.body.id
    assert.equal((await post(`/v1/object-types/${TYPE}/publish`, { to: 'published' })).status, 200)
  })

  it('refuses a bad object naming the field, then writes, conflicts and keeps history', async () => {
    const bad = await post('/v1/objects', { typeId: TYPE, attributes: { material: 'wood', height: 1 } })
    assert.equal(bad.status, 400)
    assert.equal(bad.body.error.details.field, 'geometry')
    const r = await post('/v1/objects', { typeId: TYPE, attributes: { material: 'wood', height: 9 }, geometry: { type: 'Point', coordinates: [13.40, 52.52] } })
    assert.equal(r.status, 201, r.text)
    OBJ = r.body.id
    assert.match(r.body.publicId, /^POLE-\d{4}-00001$/)
    assert.equal((await patch(`/v1/objects/${OBJ}`, { attributes: { height: 12 } }, { 'if-match': '"1"' })).status, 200)
    const conflict = await patch(`/v1/objects/${OBJ}`, { attributes: { height: 14 } }, { 'if-match': '"1"' })
    assert.equal(conflict.status, 409)
    assert.equal(conflict.body.error.details.currentVersion, 2)
    const history = await get(`/v1/objects/${OBJ}/history`)
    assert.equal(history.body.items.length, 2)
    const v1 = await get(`/v1/objects/${OBJ}?asOf=${encodeURIComponent(history.body.items[0].txFrom)}`)
    assert.equal(v1.body.attributes.height, 9)
    assert.equal(v1.body.version, 1)
    const batch = await post('/v1/objects/batch', { items: [
      { typeId: TYPE, attributes: { material: 'steel', height: 6 }, geometry: { type: 'Point', coordinates: [13.41, 52.52] } },
      { typeId: TYPE, attributes: { material: 'steel', height: 7 }, geometry: { type: 'Point', coordinates: [13.42, 52.52] } }] })
    assert.equal(batch.status, 201, batch.text)
    assert.equal(batch.body.items.length, 2)
  })

  it('runs a workflow with a permission and a spatial guard', async () => {
    const wf = await post('/v1/workflows', {
      key: 'inspection', name: 'Inspection', initialState: 'draft',
      states: [{ name: 'draft' }, { name: 'review' }, { name: 'approved', final: true }],
      transitions: [
        { from: ['draft'], targetState: 'review' },
        { from: ['review'], targetState: 'approved', guards: [
          { type: 'permission', requiredRole: 'admin' },
          { type: 'spatial', operator: 'within', message: 'must lie inside the service area',
            geometry: { type: 'Polygon', coordinates: [[[13, 52], [14, 52], [14, 53], [13, 53], [13, 52]]] } }] },
        { from: '*', targetState: 'draft' }]
    })
    assert.equal(wf.status, 201, wf.text)
    assert.equal((await patch(`/v1/object-types/${TYPE}`, { workflowId: wf.body.id })).status, 200)
    assert.equal((await post(`/v1/object-types/${TYPE}/publish`, {})).status, 200)
    const pole = await post('/v1/objects', { typeId: TYPE, attributes: { material: 'steel', height: 8 }, geometry: { type: 'Point', coordinates: [13.4, 52.5] } })
    POLE = pole.body.id
    assert.equal(pole.body.workflowState, 'draft')
    const t = await post(`/v1/objects/${POLE}/workflow/transitions`, { targetState: 'review', comment: 'ready' })
    assert.equal(t.status, 200, t.text)
    const explain = await get(`/v1/objects/${POLE}/workflow/explain-transitions`)
    assert.equal(explain.status, 200, explain.text)
    assert.ok(JSON.stringify(explain.body).includes('approved'))
  })

  it('links objects and queries them spatially, by attribute, in aggregate and as a graph', async () => {
    const rel = await post('/v1/relations', { fromObjectId: OBJ, toObjectId: POLE, relationType: 'feeds', metadata: { cable: 'A1' } })
    assert.equal(rel.status, 201, rel.text)
    const q = await post('/v1/queries/objects/run', {
      filters: [
        { field: 'geometry', operator: 'dwithin', distanceMeters: 5000, value: { type: 'Point', coordinates: [13.41, 52.52] } },
        { field: 'attributes.height', operator: 'gte', value: 5 }],
      sorts: [{ field: 'attributes.height', order: 'desc' }],
      aggregations: [{ field: '*', function: 'count' }, { field: 'attributes.height', function: 'avg' }]
    })
    assert.equal(q.status, 200, q.text)
    // 12 (OBJ), 8 (POLE, 4.3 km away), 7, 6
    assert.deepEqual(q.body.items.map((o: any) => o.attributes.height), [12, 8, 7, 6])
    const g = await post('/v1/queries/objects/run', { graph: { objectIds: [OBJ], maxDepth: 2, relationDirection: 'outgoing' } })
    assert.equal(g.status, 200, g.text)
    assert.ok(JSON.stringify(g.body).includes(POLE))
  })

  it('publishes a layer as GeoJSON, NDJSON, vector tiles, TileJSON and OGC API - Features', async () => {
    const l = await post('/v1/layers/definitions', { name: 'Poles', slug: 'poles',
      definition: { filters: { typeId: TYPE, query: [{ field: 'attributes.height', operator: 'gte', value: 5 }] }, fields: ['typeId', 'publicId', 'attributes.height'] } })
    assert.equal(l.status, 201, l.text)
    const fc = await get('/v1/layers/objects?layer=poles&bbox=13,52,14,53')
    assert.equal(fc.body.features.length, 4)
    const nd = await get('/v1/layers/objects/stream?layer=poles')
    assert.equal(nd.text.trim().split('\n').length, 4)
    const tile = await fetchOnce(`${svc.base}/v1/layers/tiles/poles/10/550/335.mvt`, { method: 'GET', headers: { authorization: `Bearer ${token}` } })
    assert.equal(tile.status, 200)
    const layer = new VectorTile(new Pbf(new Uint8Array(await tile.arrayBuffer()))).layers.poles
    const heights = Array.from({ length: layer.length }, (_, i) => Number(layer.feature(i).properties['attributes.height']))
    assert.deepEqual(heights.sort((a, b) => a - b), [6, 7, 8, 12])
    const tj = await get('/v1/layers/tiles/poles.json')
    assert.deepEqual(tj.body.bounds, [13.4, 52.5, 13.42, 52.52])
    const ogc = await get('/v1/layers/ogc/collections/poles/items?limit=10')
    assert.equal(ogc.status, 200, ogc.text)
    assert.equal(ogc.body.features.length, 4)
  })

  it('shows the layer on /map in headless Chromium, with a feature\'s properties on click', async () => {
    const browser = await launchChromium()
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 700 } })
      const external = externalRequests(page, svc.base)
      await page.goto(`${svc.base}/map#token=${token}&layer=poles`)
      assert.notEqual((await page.textContent('#status'))?.trim(), '', 'the first view says that it is loading')
      await page.waitForFunction(() => (window as any).mapState.ready === true || (window as any).mapState.error !== null, null, { timeout: 120_000 })
      assert.equal(await page.evaluate(() => (window as any).mapState.error), null)
      const points = await page.evaluate(() => (window as any).map.queryRenderedFeatures({ layers: ['point'] })
        .map((f: any) => ({ publicId: f.properties.publicId, xy: (window as any).map.project(f.geometry.coordinates) })))
      assert.ok(points.length > 0, 'no feature was rendered')
      const shown = new Set(points.map((p: { publicId: string }) => p.publicId))
      assert.equal(shown.size, 4)
      assert.match(await page.textContent('#status') ?? '', /poles: 4 feature\(s\) in view/)
      fs.mkdirSync('artifacts', { recursive: true })
      await page.screenshot({ path: `artifacts/map-${MODE}.png` })
      await page.mouse.click(points[0].xy.x, points[0].xy.y)
      const popup = await page.waitForSelector('.maplibregl-popup', { timeout: 10_000 })
      assert.ok(shown.has((await popup.textContent() ?? '').match(/POLE-\d{4}-\d{5}/)?.[0] ?? ''))
      assert.deepEqual(external, [])
    } finally {
      await browser.close()
    }
  })

  it('proves an audit event in the chain', async () => {
    const evt = await until('an audit event', async () => (await get('/v1/audit/events?limit=1')).body.items[0]?.id)
    const proof = await until('a sequenced audit event', async () => {
      const p = await get(`/v1/audit/events/${evt}/proof`)
      return p.status === 200 ? p : null
    })
    assert.equal(proof.body.valid, true)
    // The Merkle tree over the chain (after several sequenced batches: the kept frontier is read back).
    const inclusion = await get(`/v1/audit/events/${evt}/inclusion-proof`)
    assert.equal(inclusion.status, 200)
    assert.match(inclusion.body.rootHash, /^[0-9a-f]{64}$/)
    const head = await get('/v1/audit/tree-head')
    assert.match(head.body.rootHash, /^[0-9a-f]{64}$/)
    assert.ok(head.body.treeSize >= inclusion.body.treeSize)
  })

  it('runs an automation rule on object events: a signed webhook call', async () => {
    const r = await post('/v1/automation/rules', {
      name: 'tell the field app',
      trigger: { type: 'object.event', events: ['object.transitioned'], typeId: TYPE },
      match: { type: 'attribute', path: '$.object.workflowState', operator: 'equals', value: 'draft' },
      effect: { type: 'webhook', url: `http://127.0.0.1:${receiverPort}/poles`, body: { pole: '{{object.id}}', state: '{{object.workflowState}}' } }
    })
    assert.equal(r.status, 201, r.text)
    const rule = r.body.id
    assert.equal((await post(`/v1/automation/rules/${rule}/publish`, { to: 'active' })).status, 200)
    assert.equal((await post(`/v1/objects/${POLE}/workflow/transitions`, { targetState: 'draft' })).status, 200)
    await post('/v1/outbox/flush')
    const call = await until('the webhook call', async () => received.find(c => c.url === '/poles'))
    assert.deepEqual(call.body, { pole: POLE, state: 'draft' })
    const runs = await until('a succeeded run', async () => {
      const list = await get(`/v1/automation/rules/${rule}/runs`)
      return list.body.items.some((x: any) => x.status === 'succeeded') ? list : null
    })
    assert.ok(runs.body.items.length >= 1)
  })

  it('runs a scheduled rule', async () => {
    const r = await post('/v1/automation/rules', {
      name: 'every minute',
      trigger: { type: 'schedule', cron: '* * * * *' },
      effect: { type: 'webhook', url: `http://127.0.0.1:${receiverPort}/tick`, body: { at: '{{now}}' } }
    })
    assert.equal(r.status, 201, r.text)
    assert.equal((await post(`/v1/automation/rules/${r.body.id}/publish`, { to: 'active' })).status, 200)
    // A schedule fires at most once a minute: up to 60 s to the next minute, then up to 30 s to pg-boss's next pass.
    const tick = await until('a scheduled webhook call', async () => received.find(c => c.url === '/tick'), 150_000)
    assert.match(tick.body.at, /^\d{4}-\d\d-\d\dT/)
    assert.equal((await post(`/v1/automation/rules/${r.body.id}/deactivate`)).status, 200)
  })

  it('reshapes roles with a permission policy', async () => {
    const r = await call('PUT', '/v1/permissions/policy', { roles: { inspector: { objects: ['read', 'transition'], workflows: ['read'] } } }, { 'if-match': '"0"' })
    assert.equal(r.status, 200, r.text)
    const inspector = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/token.ts', '--tenant', tenant, '--roles', 'inspector', '--sub', 'ines'],
      { env: { ...process.env, ...svc.env }, encoding: 'utf8' }).trim()
    const del = await fetchOnce(`${svc.base}/v1/objects/${OBJ}`, { method: 'DELETE', headers: { authorization: `Bearer ${inspector}` } })
    assert.equal(del.status, 403)
    const read = await fetchOnce(`${svc.base}/v1/objects/${OBJ}`, { method: 'GET', headers: { authorization: `Bearer ${inspector}` } })
    assert.equal(read.status, 200)
  })

  it('answers GraphQL over the same services', async () => {
    const r = await post('/v1/graphql', { query: `{ object(id: "${OBJ}") { id version } }` })
    assert.equal(r.status, 200, r.text)
    assert.equal(r.body.data.object.version, 2)
  })
})
