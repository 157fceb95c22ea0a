import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { gunzipSync } from 'node:zlib'
import type { Browser, Page } from 'playwright-core'
import { publishedType, useOwnerSession } from '../support/harness.js'
import { externalRequests, launchChromium } from '../support/browser.js'

// The /map page (server/map) against the real app and database, in headless Chromium: the
// basemap, the view fitted to the layer, colours and legend by workflow state, the empty state,
// and live updates from the change feed (GET /v1/changes) without a reload.

// The bytes as sent (fetch undoes gzip itself).
function rawGet (url: string, headers: Record<string, string>): Promise<{ headers: http.IncomingHttpHeaders, body: Buffer }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }))
    }).on('error', reject)
  })
}

describe('GET /map/basemap.json', () => {
  const o = useOwnerSession()

  it('answers Natural Earth land and borders as GeoJSON, gzip when accepted, each coding with its own ETag', async () => {
    const plain = await fetch(`${o.s.base}/map/basemap.json`, { headers: { 'accept-encoding': 'identity' } })
    assert.equal(plain.status, 200)
    assert.equal(plain.headers.get('content-type'), 'application/geo+json')
    assert.equal(plain.headers.get('content-encoding'), null)
    const identity = Buffer.from(await plain.arrayBuffer())
    const doc = JSON.parse(identity.toString('utf8'))
    const kinds = new Map<string, string>(doc.features.map((f: any) => [f.properties.kind, f.geometry.type]))
    assert.deepEqual(Object.fromEntries(kinds), { land: 'MultiPolygon', border: 'MultiLineString' })

    const zipped = await rawGet(`${o.s.base}/map/basemap.json`, { 'accept-encoding': 'gzip' })
    assert.equal(zipped.headers['content-encoding'], 'gzip')
    assert.notEqual(zipped.headers.etag, plain.headers.get('etag'))
    assert.match(String(zipped.headers.vary), /Accept-Encoding/)
    assert.ok(zipped.body.length < identity.length / 2)
    assert.ok(gunzipSync(zipped.body).equals(identity))

    const again = await fetch(`${o.s.base}/map/basemap.json`, { headers: { 'accept-encoding': 'identity', 'if-none-match': plain.headers.get('etag') ?? '' } })
    assert.equal(again.status, 304)
    const other = await fetch(`${o.s.base}/map/basemap.json`, { headers: { 'accept-encoding': 'gzip', 'if-none-match': plain.headers.get('etag') ?? '' } })
    assert.equal(other.status, 200, 'the identity ETag does not hold for the gzip coding')
    await other.arrayBuffer()
  })

  it('compresses the page\'s scripts too (MapLibre is most of what the page loads)', async () => {
    const r = await fetch(`${o.s.base}/map/maplibre-gl.js`, { headers: { 'accept-encoding': 'gzip' } })
    assert.equal(r.status, 200)
    assert.equal(r.headers.get('content-encoding'), 'gzip')
    assert.ok((await r.text()).includes('maplibregl'))
  })
})

describe('/map in headless Chromium', { timeout: 600_000 }, () => {
  const o = useOwnerSession()
  let browser: Browser
  let typeId = ''
  let workflowId = ''
  const BERLIN: Array<[number, number]> = [[13.38, 52.50], [13.42, 52.53]]

  before(async () => {
    browser = await launchChromium()
    const wf = await o.owner.post('/v1/workflows', {
      key: 'inspection', name: 'Inspection', initialState: 'draft',
      states: [{ name: 'draft' }, { name: 'review' }, { name: 'approved', final: true }],
      transitions: [{ from: ['draft'], targetState: 'review' }, { from: ['review'], targetState: 'approved' }]
    })
    assert.equal(wf.status, 201, wf.text)
    workflowId = wf.body.id
    typeId = await publishedType(o.owner, { workflowId, geometry: { required: true, types: ['Point'] } })
  })
  after(() => browser?.close())

  const createObject = async (lonLat: [number, number]): Promise<string> => {
    const r = await o.owner.post('/v1/objects', { typeId, attributes: { name: 'pole' }, geometry: { type: 'Point', coordinates: lonLat } })
    assert.equal(r.status, 201, r.text)
    return r.body.id
  }

  async function open (slug: string): Promise<{ page: Page, external: string[] }> {
    const page = await browser.newPage({ viewport: { width: 900, height: 650 } })
    const external = externalRequests(page, o.s.base)
    const errors: string[] = []
    page.on('pageerror', err => errors.push(String(err)))
    await page.goto(`${o.s.base}/map#token=${o.owner.token}&layer=${slug}`, { timeout: 120_000 })
    await page.waitForFunction(() => { const s = (window as any).mapState; return s !== undefined && (s.ready === true || s.error !== null) }, null, { timeout: 120_000 })
      .catch(err => { throw new Error(`${String(err)}; page errors: ${errors.join('; ')}`) })
    assert.equal(await page.evaluate(() => (window as any).mapState.error), null)
    assert.deepEqual(errors, [])
    return { page, external }
  }

  const mapState = (page: Page): Promise<any> => page.evaluate(() => (window as any).mapState)
  // Waits on a condition over window.mapState; a timeout says what the page's state was.
  async function until (page: Page, what: string, fn: (s: any, arg: any) => boolean, arg?: unknown): Promise<void> {
    await page.waitForFunction(`(${fn.toString()})(window.mapState, ${JSON.stringify(arg ?? null)})`, null, { timeout: 60_000 })
      .catch(async err => { throw new Error(`${what}: ${String(err).split('\n')[0]}; mapState ${JSON.stringify(await mapState(page))}`) })
  }
  const rendered = (page: Page, layer: string): Promise<any[]> =>
    page.evaluate((l) => (window as any).map.queryRenderedFeatures({ layers: [l] }).map((f: any) => f.properties), layer)

  it('draws the layer over land and borders, fitted to its extent, coloured by state with a legend', async () => {
    const [a, b] = [await createObject(BERLIN[0]), await createObject(BERLIN[1])]
    const t = await o.owner.post(`/v1/objects/${b}/workflow/transitions`, { targetState: 'review' })
    assert.equal(t.status, 200, t.text)
    assert.equal((await o.owner.post('/v1/layers/definitions', { name: 'Poles', slug: 'poles', definition: { filters: { typeId } } })).status, 201)

    const { page, external } = await open('poles')
    try {
      const s = await mapState(page)
      assert.equal(s.basemap, 'loaded')
      assert.ok((await rendered(page, 'land')).length > 0, 'no land was rendered under Berlin')
      assert.equal(s.empty, false)
      assert.equal(s.features, 2)
      const bounds = await page.evaluate(() => (window as any).map.getBounds().toArray())
      for (const [lon, lat] of BERLIN) assert.ok(lon > bounds[0][0] && lon < bounds[1][0] && lat > bounds[0][1] && lat < bounds[1][1], 'the view holds the layer')
      assert.ok(bounds[1][0] - bounds[0][0] < 1, 'the view is fitted to the layer, not the world')
      assert.deepEqual(s.legend.map((r: any) => [r.state, r.count]), [['draft', 1], ['review', 1]])
      assert.notEqual(s.legend[0].colour, s.legend[1].colour)
      assert.match(await page.textContent('#legend') ?? '', /draft · 1.*review · 1/)
      assert.equal(await page.isVisible('#notice'), false)
      const colours = await page.evaluate(() => (window as any).map.queryRenderedFeatures({ layers: ['point'] })
        .map((f: any) => [f.properties.id, f.layer.paint['circle-color'].toString()]))
      const byId = Object.fromEntries(colours)
      assert.notEqual(byId[a], byId[b], 'two states, two colours')
      assert.deepEqual(external, [])
    } finally {
      await page.close()
    }
  })

  it('says when the layer has no features, then shows the first one created through the API without a reload', async () => {
    assert.equal((await o.owner.post('/v1/layers/definitions', { name: 'Empty', slug: 'empty', definition: { filters: { typeId, workflowState: 'approved' } } })).status, 201)
    const { page } = await open('empty')
    try {
      const s = await mapState(page)
      assert.equal(s.empty, true)
      assert.equal(s.features, 0)
      assert.equal(await page.textContent('#notice'), 'No features in this layer')
      assert.equal(await page.isVisible('#notice'), true)
      assert.equal(await page.isVisible('#legend'), false)
      assert.equal(s.feed.status, 'live', `the change feed: ${s.feed.error}`)

      // Moved into the layer's selection by two transitions: the page follows the feed.
      const id = await createObject([2.35, 48.86])
      assert.equal((await o.owner.post(`/v1/objects/${id}/workflow/transitions`, { targetState: 'review' })).status, 200)
      assert.equal((await o.owner.post(`/v1/objects/${id}/workflow/transitions`, { targetState: 'approved' })).status, 200)
      await until(page, 'the first feature', s => s.empty === false)
      const after = await mapState(page)
      assert.equal(after.empty, false)
      assert.equal(await page.isVisible('#notice'), false)
      assert.deepEqual(after.legend.map((r: any) => r.state), ['approved'])
      assert.deepEqual((await rendered(page, 'point')).map(p => p.id), [id], 'fitted to the new extent (Paris), the feature is drawn')
    } finally {
      await page.close()
    }
  })

  it('draws an object created through the API in view, and a transition\'s new colour, without a reload', async () => {
    const { page } = await open('poles')
    try {
      const before = await mapState(page)
      assert.equal(before.feed.status, 'live', `the change feed: ${before.feed.error}`)
      await page.evaluate(() => { (window as any).reloaded = false })
      const id = await createObject([13.40, 52.515])
      await until(page, 'the new object', (s, n) => s.features === n, before.features + 1)
      assert.ok((await rendered(page, 'point')).some(p => p.id === id), 'the new object is rendered')
      assert.equal(await page.evaluate(() => (window as any).reloaded), false, 'the page was not reloaded')

      assert.equal((await o.owner.post(`/v1/objects/${id}/workflow/transitions`, { targetState: 'review' })).status, 200)
      await until(page, 'the new state in the legend', s => s.legend.some((r: any) => r.state === 'review' && r.count === 2))
      const s = await mapState(page)
      assert.ok(s.feed.changes >= 2)
      assert.ok(s.feed.cursor !== null)
    } finally {
      await page.close()
    }
  })

  it('after a dropped stream, resumes from its cursor and draws what changed meanwhile', async () => {
    const { page } = await open('poles')
    try {
      await until(page, 'the feed', s => s.feed.status === 'live')
      const n = (await mapState(page)).features
      // One change seen live gives the page a cursor; its second, later redraw is awaited too.
      await createObject([13.41, 52.505])
      await until(page, 'the live change, redrawn twice', (s, k) => s.features === k && s.redraws >= 2, n + 1)
      // Offline, the stream cut: the object is written while the page cannot hear, and cannot reconnect.
      await page.context().setOffline(true)
      await page.evaluate(() => (window as any).mapFeed.drop())
      await until(page, 'the drop', s => s.feed.status === 'reconnecting')
      const id = await createObject([13.39, 52.52])
      await page.context().setOffline(false)
      await until(page, 'the change made during the drop', (s, k) => s.features === k, n + 2)
      assert.ok((await rendered(page, 'point')).some(p => p.id === id), 'the object written during the drop is rendered')
      const s = await mapState(page)
      assert.equal(s.feed.status, 'live')
      assert.equal(s.feed.changes, 2, 'the change written during the drop came from the resumed stream')
    } finally {
      await page.close()
    }
  })
})
