import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { startServer, newTenant, publishedType, token, silentLog, type TestServer, type Client } from '../support/harness.js'
import { openSse, changesOf } from '../support/sse.js'
import { ChangeHub, start } from '../../lib/changes/index.js'
import { serviceContext } from '../support/harness.js'

const point = (lon: number, lat: number) => ({ type: 'Point', coordinates: [lon, lat] })

interface Change { cursor: string, kind: string, objectId: string, typeId: string, version: number, at: string, object?: any }

/** Every change after `since`, page by page (`limit` each), with the cursors pages handed out. */
async function readAll (c: Client, query: string, limit: number, since?: string): Promise<{ changes: Change[], next: string }> {
  const changes: Change[] = []
  let cursor = since
  for (let i = 0; i < 1000; i++) {
    const res = await c.get(`/v1/changes?limit=${limit}${query}${cursor === undefined ? '' : `&since=${cursor}`}`)
    assert.equal(res.status, 200, res.text)
    changes.push(...res.body.changes)
    assert.ok(res.body.changes.length <= limit)
    cursor = res.body.nextCursor
    if (!res.body.hasMore) return { changes, next: cursor! }
  }
  throw new Error('the feed never reached its end')
}

const brief = (c: Change) => `${c.kind}:${c.objectId}:${c.version}`

describe('GET /v1/changes', () => {
  let s: TestServer
  let tenant: string
  let owner: Client
  let typeId: string
  before(async () => {
    s = await startServer()
    tenant = newTenant('chg')
    owner = s.as(tenant, ['owner'])
    const wf = await owner.post('/v1/workflows', {
      key: 'inspection', name: 'Inspection', initialState: 'draft',
      states: [{ name: 'draft' }, { name: 'review' }], transitions: [{ from: ['draft'], targetState: 'review' }, { from: '*', targetState: 'draft' }]
    })
    assert.equal(wf.status, 201, wf.text)
    typeId = await publishedType(owner, { workflowId: wf.body.id })
  })
  after(() => s.close())

  async function create (lon = 13.4, lat = 52.5, name = 'x'): Promise<string> {
    const r = await owner.post('/v1/objects', { typeId, attributes: { name }, geometry: point(lon, lat) })
    assert.equal(r.status, 201, r.text)
    return r.body.id
  }
  async function patch (id: string, version: number, body: object): Promise<void> {
    const r = await owner.patch(`/v1/objects/${id}`, body, { 'If-Match': `"${version}"` })
    assert.equal(r.status, 200, r.text)
  }

  it('lists created, updated, transitioned and deleted in commit order, each with the object as of that change, and a tombstone for the delete', async () => {
    const { next: since } = await readAll(owner, '', 1000)
    const a = await create(13.4, 52.5, 'a')
    await patch(a, 1, { attributes: { name: 'a2' } })
    const t = await owner.post(`/v1/objects/${a}/workflow/transitions`, { targetState: 'review' })
    assert.equal(t.status, 200, t.text)
    assert.equal((await owner.delete(`/v1/objects/${a}`)).status, 204)
    const { changes } = await readAll(owner, '', 100, since)
    assert.deepEqual(changes.map(brief), [`created:${a}:1`, `updated:${a}:2`, `transitioned:${a}:3`, `deleted:${a}:4`])
    assert.equal(changes[0].object.attributes.name, 'a')
    assert.deepEqual(changes[0].object.geometry, point(13.4, 52.5))
    assert.equal(changes[1].object.attributes.name, 'a2')
    assert.equal(changes[2].object.workflowState, 'review')
    assert.equal(changes[2].object.version, 3)
    assert.equal('object' in changes[3], false, 'a tombstone has no object')
    assert.equal(changes[3].typeId, typeId)
    for (const c of changes) assert.match(c.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    // The object as of a change is what GET /v1/objects/{id}?asOf answered then: the same shape.
    const history = await owner.get(`/v1/objects/${a}/history`)
    assert.deepEqual(changes[1].object, history.body.items[1].object)
  })

  it('hands out every change exactly once to a reader that resumes from each cursor while writers run', async () => {
    const { next: since } = await readAll(owner, '', 1000)
    const writes = (async () => {
      const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => create(13 + i / 100, 52, `w${i}`)))
      await Promise.all(ids.slice(0, 10).map(id => patch(id, 1, { attributes: { name: 'again' } })))
      return ids
    })()
    const seen: Change[] = []
    let cursor = since
    let done = false
    void writes.then(() => { done = true })
    // Small pages while the writes commit; every page resumes from the last one's nextCursor.
    for (;;) {
      const finished = done
      const res = await owner.get(`/v1/changes?limit=3&include=id&since=${cursor}`)
      assert.equal(res.status, 200, res.text)
      seen.push(...res.body.changes)
      cursor = res.body.nextCursor
      if (finished && !res.body.hasMore) break
    }
    const ids = await writes
    const keys = seen.map(brief)
    assert.equal(new Set(keys).size, keys.length, 'no change twice')
    assert.equal(seen.length, 40)
    for (const id of ids) assert.ok(keys.includes(`created:${id}:1`))
    for (const id of ids.slice(0, 10)) assert.ok(keys.includes(`updated:${id}:2`))
    // Resuming from any change's cursor gives exactly what followed it.
    const again = await readAll(owner, '&include=id', 7, seen[11].cursor)
    assert.deepEqual(again.changes.map(brief), keys.slice(12))
  })

  it('leaves the object out with include=id', async () => {
    const { next: since } = await readAll(owner, '', 1000)
    const a = await create()
    const res = await owner.get(`/v1/changes?include=id&since=${since}`)
    assert.equal(res.status, 200, res.text)
    assert.deepEqual(Object.keys(res.body.changes[0]).sort(), ['at', 'cursor', 'kind', 'objectId', 'typeId', 'version'])
    assert.equal(res.body.changes[0].objectId, a)
  })

  it('with bbox, shows an object that moves out as left and one that moves in as entered, and nothing of objects that stay outside', async () => {
    const { next: since } = await readAll(owner, '', 1000)
    const box = '&bbox=13,52,14,53'
    const inside = await create(13.5, 52.5, 'in')
    const outside = await create(20, 40, 'out')
    await patch(outside, 1, { attributes: { name: 'still out' } })
    await patch(inside, 1, { geometry: point(20, 40) }) // leaves
    await patch(outside, 2, { geometry: point(13.2, 52.2) }) // enters
    await patch(outside, 3, { attributes: { name: 'in now' } })
    assert.equal((await owner.delete(`/v1/objects/${inside}`)).status, 204) // deleted outside: not shown
    const { changes } = await readAll(owner, box, 2, since)
    assert.deepEqual(changes.map(brief), [`created:${inside}:1`, `left:${inside}:2`, `entered:${outside}:3`, `updated:${outside}:4`])
    assert.equal('object' in changes[1], false, 'left carries no object')
    assert.deepEqual(changes[2].object.geometry, point(13.2, 52.2))
  })

  it('takes a layer\'s filters', async () => {
    const l = await owner.post('/v1/layers/definitions', { name: 'Tall', slug: 'named-b', definition: { filters: { typeId, attributes: { name: 'b' } } } })
    assert.equal(l.status, 201, l.text)
    const { next: since } = await readAll(owner, '', 1000)
    const a = await create(13, 52, 'a')
    const b = await create(13, 52, 'b')
    await patch(a, 1, { attributes: { name: 'b' } })
    const { changes } = await readAll(owner, '&layer=named-b', 100, since)
    assert.deepEqual(changes.map(brief), [`created:${b}:1`, `entered:${a}:2`])
    assert.equal((await owner.get('/v1/changes?layer=no-such-layer')).status, 404)
  })

  it('answers since=now with no changes and a cursor at the end', async () => {
    const res = await owner.get('/v1/changes?since=now')
    assert.equal(res.status, 200, res.text)
    assert.deepEqual(res.body.changes, [])
    assert.equal(res.body.hasMore, false)
    const a = await create()
    const next = await owner.get(`/v1/changes?since=${res.body.nextCursor}`)
    assert.deepEqual(next.body.changes.map(brief), [`created:${a}:1`])
  })

  it('answers 400 saying how to restart for a malformed, foreign or future cursor, and for bad parameters', async () => {
    const other = s.as(newTenant('chg-other'), ['owner'])
    const foreign = (await other.get('/v1/changes?since=now')).body.nextCursor
    const mine = (await owner.get('/v1/changes?since=now')).body.nextCursor
    const future = Buffer.from(Buffer.from(mine, 'base64url').toString().replace(/\d+$/, '999999999')).toString('base64url')
    for (const since of ['garbage', foreign, future, 'YWJj']) {
      const res = await owner.get(`/v1/changes?since=${since}`)
      assert.equal(res.status, 400, `${since}: ${res.text}`)
      assert.equal(res.body.error.code, 'VALIDATION_ERROR')
      assert.equal(res.body.error.details.field, 'since')
      assert.match(res.body.error.message, /since=now/)
    }
    for (const q of ['limit=0', 'limit=1001', 'bbox=1,2,3', 'include=all', 'typeId=nope', 'other=1']) {
      const res = await owner.get(`/v1/changes?${q}`)
      assert.equal(res.status, 400, `${q}: ${res.text}`)
      assert.equal(res.body.error.code, 'VALIDATION_ERROR')
    }
  })

  it('needs objects:read, and shows a tenant only its own changes', async () => {
    const narrowed = token({ tenant, roles: ['owner'], scope: 'layers:read' })
    const denied = await s.request('GET', '/v1/changes', { token: narrowed })
    assert.equal(denied.status, 403, denied.text)
    assert.equal(denied.body.error.code, 'FORBIDDEN')
    const stream = await s.request('GET', '/v1/changes', { token: narrowed, headers: { Accept: 'text/event-stream' } })
    assert.equal(stream.status, 403)
    const other = s.as(newTenant('chg-iso'), ['viewer'])
    const res = await other.get('/v1/changes?limit=1000')
    assert.equal(res.status, 200, res.text)
    assert.deepEqual(res.body.changes, [])
  })
})

describe('GET /v1/changes as a live stream (text/event-stream)', () => {
  let a: TestServer
  let b: TestServer
  let tenant: string
  let owner: Client
  let typeId: string
  before(async () => {
    a = await startServer({ CHANGES_MAX_STREAMS_PER_TENANT: '2', CHANGES_HEARTBEAT_SECONDS: '1' })
    b = await startServer({ CHANGES_MAX_STREAMS_PER_TENANT: '2', CHANGES_HEARTBEAT_SECONDS: '1' })
    tenant = newTenant('sse')
    owner = a.as(tenant, ['owner'])
    typeId = await publishedType(owner)
  })
  after(async () => { await a.close(); await b.close() })

  const auth = () => ({ Authorization: `Bearer ${owner.token}` })

  it('delivers a change committed through another API process, with its cursor as the event id', async () => {
    const stream = await openSse(`${b.base}/v1/changes?since=now`, auth())
    try {
      assert.equal(stream.status, 200)
      assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/)
      const created = await owner.post('/v1/objects', { typeId, attributes: { name: 'live' } })
      assert.equal(created.status, 201)
      const events = await stream.until('the created change', e => changesOf(e).length >= 1)
      const change = changesOf(events)[0]
      assert.equal(change.kind, 'created')
      assert.equal(change.objectId, created.body.id)
      assert.deepEqual(change.object, created.body)
      assert.equal(events.find(e => e.event === 'change')!.id, change.cursor)
      // The paged feed hands out the same cursor for the same change.
      const page = await owner.get(`/v1/changes?include=id&since=${(await owner.get('/v1/changes?since=now')).body.nextCursor}`)
      assert.equal(page.status, 200)
    } finally { stream.close() }
  })

  it('resumes after Last-Event-ID, with every later change once', async () => {
    const first = await owner.get('/v1/changes?since=now')
    const ids: string[] = []
    for (let i = 0; i < 3; i++) ids.push((await owner.post('/v1/objects', { typeId, attributes: { name: `r${i}` } })).body.id)
    const page = await owner.get(`/v1/changes?since=${first.body.nextCursor}`)
    assert.equal(page.body.changes.length, 3)
    const stream = await openSse(`${b.base}/v1/changes?since=${first.body.nextCursor}`, { ...auth(), 'Last-Event-ID': page.body.changes[0].cursor })
    try {
      await stream.until('two changes', e => changesOf(e).length >= 2)
      const late = (await owner.post('/v1/objects', { typeId, attributes: { name: 'late' } })).body.id
      const events = await stream.until('the third change', e => changesOf(e).length >= 3)
      assert.deepEqual(changesOf(events).map(c => c.objectId), [ids[1], ids[2], late])
    } finally { stream.close() }
    const bad = await openSse(`${b.base}/v1/changes`, { ...auth(), 'Last-Event-ID': 'not-a-cursor' })
    assert.equal(bad.status, 400)
    bad.close()
  })

  it('sends heartbeats, and answers 429 beyond the open streams a tenant may have on one server', async () => {
    const one = await openSse(`${a.base}/v1/changes?since=now`, auth())
    const two = await openSse(`${a.base}/v1/changes?since=now`, auth())
    try {
      assert.equal(one.status, 200)
      assert.equal(two.status, 200)
      const three = await openSse(`${a.base}/v1/changes?since=now`, auth())
      assert.equal(three.status, 429)
      three.close()
      // Another tenant is not limited by this one's streams.
      const other = await openSse(`${a.base}/v1/changes?since=now`, { Authorization: `Bearer ${token({ tenant: newTenant('sse-other'), roles: ['viewer'] })}` })
      assert.equal(other.status, 200)
      other.close()
      await one.until('a heartbeat', e => e.some(x => x.comment === 'heartbeat'), 5000)
      two.close()
      await two.ended
      // The closed stream's place is free again (the server notices the close).
      let again
      for (let i = 0; i < 50; i++) {
        again = await openSse(`${a.base}/v1/changes?since=now`, auth())
        if (again.status === 200) break
        again.close()
        await new Promise(resolve => setTimeout(resolve, 100))
      }
      assert.equal(again!.status, 200)
      again!.close()
    } finally { one.close(); two.close() }
  })

  it('drops a consumer that does not read, with the cursor to resume from, rather than buffer without bound', async () => {
    const hub = new ChangeHub(a.db, { maxStreamsPerTenant: 10, heartbeatMs: 60_000, bufferBytes: 16 * 1024 }, silentLog)
    try {
      const ctx = serviceContext(a.db, tenant)
      const { start: from } = await start(ctx, {})
      const out: Readable = hub.open(tenant, from) // never read
      const ended = new Promise<void>(resolve => out.once('end', () => resolve()))
      assert.equal(hub.streams(tenant), 1)
      const items = Array.from({ length: 200 }, (_, i) => ({ typeId, attributes: { name: `bulk-${i}-${'x'.repeat(100)}` } }))
      assert.equal((await owner.post('/v1/objects/batch', { items })).status, 201)
      for (let i = 0; i < 100 && hub.streams(tenant) > 0; i++) await new Promise(resolve => setTimeout(resolve, 50))
      assert.equal(hub.streams(tenant), 0, 'dropped')
      let text = ''
      out.on('data', (c: Buffer) => { text += c.toString() })
      await ended
      const dropped = text.split('\n\n').find(b => b.startsWith('event: dropped'))
      assert.ok(dropped, 'ends with a dropped event')
      const info = JSON.parse(dropped.split('data: ')[1])
      assert.match(info.reason, /slow consumer/)
      const lastId = text.split('\n\n').filter(b => b.startsWith('id: ')).map(b => b.split('\n')[0].slice(4)).pop()
      assert.equal(info.cursor, lastId, 'the resume position is the last change sent')
    } finally { hub.stop() }
  })
})
