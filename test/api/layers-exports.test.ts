import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { mkdtemp, writeFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Db } from '../../lib/db.js'
import * as layers from '../../lib/layers/index.js'
import { newTenant, serviceContext, useOwnerSession, type Client } from '../support/harness.js'

const run = promisify(execFile)

/** n point objects of a type straight into the tables (with their history rows and counter deltas). */
async function seed (db: Db, tenant: string, typeId: string, n: number): Promise<void> {
  await db.raw(`
    WITH o AS (
      INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, workflow_state, version, valid_from, created_at, updated_at)
      SELECT gen_random_uuid(), ?, ?, 1, 'seed-' || i, jsonb_build_object('name', 'n' || i, 'height', i % 50),
        ST_SetSRID(ST_MakePoint(-10 + (i % 1000) * 0.02, 40 + (i / 1000) * 0.02), 4326), NULL, 1, now(), now(), now()
      FROM generate_series(1, ?) i RETURNING *
    ), v AS (
      INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes, geom, workflow_state, created_at, updated_at, valid_from, tx_from, actor)
      SELECT id, 1, tenant_id, type_id, public_id, 'created', attributes, geom, workflow_state, created_at, updated_at, valid_from, created_at, NULL FROM o
    )
    INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
    SELECT ?, c, ?, (SELECT count(*) FROM o) FROM unnest(ARRAY['objects', 'object_changes']) c`, [tenant, typeId, n, tenant, typeId])
}

async function ogrinfo (c: Client, args: string[]): Promise<string> {
  const { stdout } = await run('ogrinfo', args, {
    env: { ...process.env, GDAL_HTTP_HEADERS: `Authorization: Bearer ${c.token}`, CPL_CURL_VERBOSE: 'NO', GDAL_HTTP_TIMEOUT: '30' },
    maxBuffer: 64 * 1024 * 1024
  })
  return stdout
}

/** Waits up to `ms` for every connection of the test server's pool to be back (none in use); the count left. */
async function poolIdle (db: Db, ms = 5_000): Promise<number> {
  const pool = (db.client as { pool: { numUsed: () => number } }).pool
  const deadline = Date.now() + ms
  while (pool.numUsed() > 0 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 20))
  return pool.numUsed()
}

describe('GET /v1/layers/objects/stream (NDJSON)', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'lyrnd', type: true })
  const N = 20_000
  before(async () => {
    await seed(ctx.s.db, ctx.tenant, ctx.typeId, N)
    assert.equal((await ctx.owner.post('/v1/layers/definitions', { name: 'Big', slug: 'big', definition: { filters: { typeId: ctx.typeId } } })).status, 201)
  })

  it('streams one Feature per line for a large set', async () => {
    const res = await fetch(`${ctx.s.base}/v1/layers/objects/stream?layer=big&fields=attributes.name`, { headers: { Authorization: `Bearer ${ctx.owner.token}` } })
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^application\/x-ndjson/)
    const text = await res.text()
    const lines = text.split('\n')
    assert.equal(lines.pop(), '')
    assert.equal(lines.length, N)
    const f = JSON.parse(lines[0])
    assert.equal(f.type, 'Feature')
    assert.equal(f.geometry.type, 'Point')
    assert.deepEqual(Object.keys(f.properties.attributes), ['name'])
    assert.equal(new Set(lines.map(l => JSON.parse(l).id)).size, N)
  })

  it('ends the query and frees its connection when the client goes away', async () => {
    const pool = (ctx.s.db.client as { pool: { numUsed: () => number } }).pool
    const abort = new AbortController()
    const res = await fetch(`${ctx.s.base}/v1/layers/objects/stream?layer=big`, { headers: { Authorization: `Bearer ${ctx.owner.token}` }, signal: abort.signal })
    const reader = res.body!.getReader()
    const first = await reader.read()
    assert.ok(first.value !== undefined && first.value.length > 0)
    assert.ok(pool.numUsed() >= 1, 'the stream holds a connection while it runs')
    abort.abort()
    assert.equal(await poolIdle(ctx.s.db, 10_000), 0, 'the connection went back to the pool')
    // The cancel reaches every backend the statement runs in; on a Citus cluster that includes the
    // shard's backend, which ends a moment after the coordinator's (seen once in CI): wait for it.
    const running = async () => (await ctx.s.db.raw(`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%''Feature''%'`)).rows[0].n as number
    const until = Date.now() + 5_000
    while (await running() > 0 && Date.now() < until) await new Promise(resolve => setTimeout(resolve, 50))
    assert.equal(await running(), 0, 'no stream statement is still running')
  })

  it('answers a value the database refuses before the first line with its error (400), not a cut connection', async () => {
    const res = await ctx.owner.get('/v1/layers/objects/stream?layer=big&asOf=0000-01-01T00:00:00Z')
    assert.equal(res.status, 400)
    assert.equal(res.body.error.code, 'VALIDATION_ERROR')
    assert.equal(await poolIdle(ctx.s.db), 0, 'the connection went back to the pool')
    // An empty selection is still a 200 with no lines, and the stream works after the failure.
    const none = await fetch(`${ctx.s.base}/v1/layers/objects/stream?layer=big&bbox=100,-10,100.1,-9.9`, { headers: { Authorization: `Bearer ${ctx.owner.token}` } })
    assert.equal(none.status, 200)
    assert.equal(await none.text(), '')
    const some = await fetch(`${ctx.s.base}/v1/layers/objects/stream?layer=big&bbox=-10.01,39.99,-9.95,40.05`, { headers: { Authorization: `Bearer ${ctx.owner.token}` } })
    assert.equal(some.status, 200)
    assert.ok((await some.text()).split('\n').filter(Boolean).length > 0)
  })
})

describe('DB_STATEMENT_TIMEOUT_MS', () => {
  // A short limit and a tenant large enough that a world tile takes seconds and the NDJSON stream
  // of every object takes longer than the limit.
  const ctx = useOwnerSession({ tenantPrefix: 'lyrtmo', type: true, env: { DB_STATEMENT_TIMEOUT_MS: '100' } })
  const N = 40_000
  before(async () => {
    // The setup runs outside the limit (SET LOCAL, in its own transaction): the seed is one long
    // statement, and the layer's write (through the lib, as the route does) must not race a limit
    // of 100 ms on a loaded machine (on the Citus cluster it once took longer and answered 503).
    await ctx.s.db.transaction(async tx => {
      await tx.raw('SET LOCAL statement_timeout = 0')
      await seed(tx as unknown as Db, ctx.tenant, ctx.typeId, N)
      await layers.createLayer(serviceContext(tx as unknown as Db, ctx.tenant), { name: 'All', slug: 'all', definition: { filters: { typeId: ctx.typeId } } })
    })
    assert.equal((await ctx.owner.get('/v1/layers/definitions/all')).status, 200)
  })

  it('answers a statement the limit cancels with 503 NOT_READY in the error body, and the pool serves on', async () => {
    const res = await ctx.owner.get('/v1/layers/tiles/all/0/0/0.mvt')
    assert.equal(res.status, 503, res.text)
    assert.equal(res.body.error.code, 'NOT_READY')
    assert.equal(res.body.error.details.reason, 'statement timeout')
    assert.doesNotMatch(res.text, /SELECT|ST_AsMVT/)
    // The pool serves on: a tile answers (an empty one, 200). On the Citus cluster a cancelled
    // statement also closes its coordinator backend's connections to the workers, and the next
    // statement on that connection opens them again and runs PostGIS's first transform on the new
    // worker backend (60-150 ms measured, unloaded): longer than the limit on a loaded machine,
    // and each cancel closes them anew (beside one busy process, 15 s of tries all answered 503).
    // So the connection is first used outside the limit (SET LOCAL in a transaction, as the setup
    // does; the pool hands out the connection returned last, the one the cancel left). Then the
    // tile is asked under the limit until it answers, for up to 15 s, since a statement of a few
    // milliseconds can still be cancelled while the machine is loaded; a pool the cancel had
    // broken would answer neither.
    await ctx.s.db.transaction(async tx => {
      await tx.raw('SET LOCAL statement_timeout = 0')
      await tx.raw('SELECT ST_Transform(geom, 3857) FROM objects WHERE tenant_id = ? LIMIT 1', [ctx.tenant])
    })
    const statuses: number[] = []
    const deadline = Date.now() + 15_000
    while (!statuses.includes(200) && Date.now() < deadline) {
      if (statuses.length > 0) await sleep(250)
      statuses.push((await ctx.owner.get('/v1/layers/tiles/all/10/511/340.mvt')).status)
    }
    assert.ok(statuses.includes(200), statuses.join(','))
    assert.ok(statuses.every(s => s === 200 || s === 503), statuses.join(','))
  })

  it('does not bind the NDJSON stream, and its connection goes back to the pool with the limit', async () => {
    const res = await fetch(`${ctx.s.base}/v1/layers/objects/stream?layer=all`, { headers: { Authorization: `Bearer ${ctx.owner.token}` } })
    assert.equal(res.status, 200)
    const lines = (await res.text()).split('\n')
    assert.equal(lines.pop(), '')
    assert.equal(lines.length, N)
    // Every connection of the pool still has the limit (the stream's was reset to it).
    await poolIdle(ctx.s.db)
    const pool = (ctx.s.db.client as { pool: { numFree: () => number } }).pool
    const held = await Promise.all(Array.from({ length: pool.numFree() }, () => ctx.s.db.client.acquireConnection()))
    try {
      for (const conn of held) assert.equal((await conn.query('SHOW statement_timeout')).rows[0].statement_timeout, '100ms')
    } finally {
      for (const conn of held) await ctx.s.db.client.releaseConnection(conn)
    }
  })
})

describe('OGC API - Features', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'lyrogc', type: true })
  before(async () => {
    await seed(ctx.s.db, ctx.tenant, ctx.typeId, 25)
    assert.equal((await ctx.owner.post('/v1/layers/definitions', { name: 'Sites', slug: 'sites', description: 'All sites', definition: { filters: { typeId: ctx.typeId }, fields: ['typeId', 'publicId', 'attributes.name', 'attributes.height'] } })).status, 201)
  })

  it('links service-desc, conformance and data from the landing page, every link with rel and type', async () => {
    const r = await ctx.owner.get('/v1/layers/ogc')
    assert.equal(r.status, 200, r.text)
    const rels = Object.fromEntries(r.body.links.map((l: { rel: string, href: string }) => [l.rel, l.href]))
    assert.equal(rels['service-desc'], `${ctx.s.base}/openapi/v1.json`)
    assert.equal(rels.conformance, `${ctx.s.base}/v1/layers/ogc/conformance`)
    assert.equal(rels.data, `${ctx.s.base}/v1/layers/ogc/collections`)
    const conf = await ctx.owner.get('/v1/layers/ogc/conformance')
    assert.ok(conf.body.conformsTo.includes('http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core'))
    const cols = await ctx.owner.get('/v1/layers/ogc/collections')
    assert.equal(cols.body.collections.length, 1)
    const col = cols.body.collections[0]
    assert.equal(col.id, 'sites')
    assert.deepEqual(col.extent.spatial.bbox, [[-9.98, 40, -9.5, 40]])
    for (const doc of [r.body, conf.body, cols.body, col]) {
      for (const l of doc.links) assert.ok(typeof l.rel === 'string' && typeof l.type === 'string', JSON.stringify(l))
    }
  })

  it('pages items with exact numberMatched and stable next/prev links; clamps limit; refuses unknown parameters', async () => {
    const seen: string[] = []
    let url: string | undefined = `/v1/layers/ogc/collections/sites/items?limit=10`
    let pages = 0
    while (url !== undefined) {
      const r: { status: number, text: string, body: any } = await ctx.owner.get(url)
      assert.equal(r.status, 200, r.text)
      assert.equal(r.body.numberMatched, 25)
      assert.equal(r.body.numberReturned, r.body.features.length)
      assert.match(r.body.timeStamp, /Z$/)
      seen.push(...r.body.features.map((f: { id: string }) => f.id))
      if (pages > 0) assert.ok(r.body.links.some((l: { rel: string }) => l.rel === 'prev'))
      const next = r.body.links.find((l: { rel: string }) => l.rel === 'next')
      url = next === undefined ? undefined : next.href.slice(ctx.s.base.length)
      pages++
    }
    assert.equal(pages, 3)
    assert.equal(new Set(seen).size, 25)
    const big = await ctx.owner.get('/v1/layers/ogc/collections/sites/items?limit=999999')
    assert.equal(big.status, 200)
    assert.equal(big.body.numberReturned, 25)
    const unknown = await ctx.owner.get('/v1/layers/ogc/collections/sites/items?colour=red')
    assert.equal(unknown.status, 400)
    assert.equal(unknown.body.error.details.field, 'colour')
    const bbox = await ctx.owner.get('/v1/layers/ogc/collections/sites/items?bbox=-10.01,39.99,-9.95,40.01')
    assert.equal(bbox.body.numberMatched, 2)
    const when = await ctx.owner.get(`/v1/layers/ogc/collections/sites/items?datetime=../2000-01-01T00:00:00Z`)
    assert.equal(when.status, 200, when.text)
    assert.equal(when.body.numberMatched, 0)
    const one = await ctx.owner.get(`/v1/layers/ogc/collections/sites/items/${seen[0]}`)
    assert.equal(one.status, 200, one.text)
    assert.equal(one.body.id, seen[0])
    assert.deepEqual(Object.keys(one.body.properties).sort(), ['attributes', 'publicId', 'typeId'])
    assert.equal((await ctx.owner.get('/v1/layers/ogc/collections/sites/items/00000000-0000-4000-8000-000000000000')).status, 404)
    assert.equal((await ctx.owner.get('/v1/layers/ogc/collections/nope/items')).status, 404)
  })

  it('answers SPEC\'s /v1/layers/ogc/features with links by offset', async () => {
    const r = await ctx.owner.get('/v1/layers/ogc/features?layer=sites&limit=20')
    assert.equal(r.status, 200, r.text)
    const next = r.body.links.find((l: { rel: string }) => l.rel === 'next')
    assert.equal(new URL(next.href).searchParams.get('offset'), '20')
    const last = await ctx.owner.get(next.href.slice(ctx.s.base.length))
    assert.equal(last.body.features.length, 5)
    assert.equal(last.body.links.find((l: { rel: string }) => l.rel === 'next'), undefined)
    assert.equal((await ctx.owner.get('/v1/layers/ogc/features')).status, 400)
  })

  it('declares limit with its maximum in the OpenAPI document', async () => {
    const doc = (await ctx.owner.get('/openapi/v1.json')).body
    const items = doc.paths['/v1/layers/ogc/collections/{collectionId}/items'].get
    const limit = items.parameters.find((p: { name: string }) => p.name === 'limit')
    assert.equal(limit.schema.maximum, 10000)
    assert.equal(limit.in, 'query')
  })

  it('keeps tenants apart', async () => {
    const other = ctx.s.as(newTenant('lyrogc2'), ['owner'])
    assert.deepEqual((await other.get('/v1/layers/ogc/collections')).body.collections, [])
    assert.equal((await other.get('/v1/layers/ogc/collections/sites/items')).status, 404)
    assert.equal((await other.get('/v1/layers/objects/stream?layer=sites')).status, 404)
    const nd = await other.get('/v1/layers/objects/stream')
    assert.equal(nd.status, 200)
    assert.equal(nd.text, '')
  })
})

describe('PUBLIC_URL: absolute links behind a reverse proxy', () => {
  const BASE = 'https://maps.example.com/gis'
  const ctx = useOwnerSession({ tenantPrefix: 'lyrpub', type: true, env: { PUBLIC_URL: `${BASE}/` } })
  before(async () => {
    await seed(ctx.s.db, ctx.tenant, ctx.typeId, 5)
    assert.equal((await ctx.owner.post('/v1/layers/definitions', { name: 'Sites', slug: 'sites', definition: { filters: { typeId: ctx.typeId } } })).status, 201)
  })

  it('starts every link of the OGC documents and TileJSON with it, not with the address the request came to', async () => {
    const hrefs: string[] = []
    const collect = (doc: { links?: Array<{ href: string }> }) => { for (const l of doc.links ?? []) hrefs.push(l.href) }
    const landing = await ctx.owner.get('/v1/layers/ogc')
    assert.equal(landing.status, 200, landing.text)
    collect(landing.body)
    assert.equal(landing.body.links.find((l: { rel: string }) => l.rel === 'data').href, `${BASE}/v1/layers/ogc/collections`)
    const cols = await ctx.owner.get('/v1/layers/ogc/collections')
    collect(cols.body)
    for (const c of cols.body.collections) collect(c)
    const page = await ctx.owner.get('/v1/layers/ogc/collections/sites/items?limit=2')
    assert.equal(page.status, 200, page.text)
    collect(page.body)
    assert.equal(page.body.links.find((l: { rel: string }) => l.rel === 'next').href, `${BASE}/v1/layers/ogc/collections/sites/items?limit=2&offset=2`)
    const tj = await ctx.owner.get('/v1/layers/tiles/sites.json')
    assert.equal(tj.status, 200, tj.text)
    hrefs.push(...tj.body.tiles)
    assert.ok(hrefs.length > 5)
    for (const h of hrefs) assert.ok(h.startsWith(`${BASE}/v1/`) || h === `${BASE}/openapi/v1.json`, h)
  })
})

describe('GDAL reads the exports', () => {
  const ctx = useOwnerSession({ tenantPrefix: 'lyrgdal', type: true })
  before(async () => {
    await seed(ctx.s.db, ctx.tenant, ctx.typeId, 30)
    assert.equal((await ctx.owner.post('/v1/layers/definitions', { name: 'Sites', slug: 'sites', definition: { filters: { typeId: ctx.typeId } } })).status, 201)
  })

  it('opens the layer through OAPIF on the landing page', async () => {
    const out = await ogrinfo(ctx.owner, ['-ro', '-al', '-oo', 'PAGE_SIZE=7', `OAPIF:${ctx.s.base}/v1/layers/ogc`])
    assert.match(out, /Layer name: sites/)
    assert.equal(out.match(/^OGRFeature\(sites\)/gm)?.length, 30)
  })

  it('opens the GeoJSON endpoint and the NDJSON stream (GeoJSONSeq)', async () => {
    const gj = await ogrinfo(ctx.owner, ['-ro', '-so', '-al', `${ctx.s.base}/v1/layers/objects?layer=sites`])
    assert.match(gj, /Feature Count: 30/)
    const seq = await ogrinfo(ctx.owner, ['-ro', '-so', '-al', `GeoJSONSeq:/vsicurl_streaming/${ctx.s.base}/v1/layers/objects/stream?layer=sites`])
    assert.match(seq, /Feature Count: 30/)
  })

  it('reads a saved MVT tile', async () => {
    const res = await fetch(`${ctx.s.base}/v1/layers/tiles/sites/6/30/24.mvt`, { headers: { Authorization: `Bearer ${ctx.owner.token}` } })
    assert.equal(res.status, 200)
    const dir = await mkdtemp(join(tmpdir(), 'mvt-'))
    try {
      const file = join(dir, 'tile.pbf')
      await writeFile(file, new Uint8Array(await res.arrayBuffer()))
      const out = await ogrinfo(ctx.owner, ['-ro', '-al', '-oo', 'X=30', '-oo', 'Y=24', '-oo', 'Z=6', file])
      assert.match(out, /Layer name: sites/)
      assert.equal(out.match(/^OGRFeature\(sites\)/gm)?.length, 30)
      assert.match(out, /attributes\.height \(Integer\)/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
