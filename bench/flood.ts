import { fork } from 'node:child_process'
import http from 'node:http'
import { AREA, tileAt } from './city.js'

// The fairness bench's flooding tenant (bench/fairness.ts): the requests it floods with, each as
// heavy as a viewer's token may make it, and the flood itself in a process of its own, as an
// abusive client is: in the process that times the quiet tenant, reading the flood's answers
// (megabytes a request) would delay that timing too.

/** The most text filters a query may hold (20), none matching: each a LIKE over every row's long note. */
export const HEAVY_QUERY = {
  filters: [{ operator: 'or', filters: Array.from({ length: 20 }, (_, i) => ({ field: 'attributes.note', operator: 'contains', value: `zq${i}`.repeat(1000) })) }],
  sorts: [{ field: 'attributes.note', order: 'desc' }],
  aggregations: [{ field: '*', function: 'count' }],
  limit: 1000
}

/** The flooding tenant as its requests need it: the viewer's token, its type and its layer's slug. */
export interface Flooder { token: string, typeId: string, slug: string, objects: number }

export interface FloodKind { key: string, name: string, call: () => Promise<number> }

/** A closed ring of `n` positions around a centre. */
function circle (n: number, [x, y]: [number, number], r: number): number[][] {
  const ring = Array.from({ length: n }, (_, i) => [x + r * Math.cos(2 * Math.PI * i / n), y + r * Math.sin(2 * Math.PI * i / n) * 0.6])
  return [...ring, ring[0]]
}

// Keep-alive connections as a client's; the answers are read to their end and dropped, at the
// least CPU node has for it (this process shares the machine's cores with the API).
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

/** A request whose answer is read and dropped; resolves with its status (0: no answer). */
function send (baseUrl: string, token: string, method: string, path: string, body?: Buffer): Promise<number> {
  return new Promise(resolve => {
    const headers: http.OutgoingHttpHeaders = { Authorization: `Bearer ${token}` }
    if (body !== undefined) { headers['Content-Type'] = 'application/json'; headers['Content-Length'] = body.length }
    const req = http.request(baseUrl + path, { method, headers, agent }, res => {
      res.on('end', () => { resolve(res.statusCode ?? 0) })
      res.on('error', () => { resolve(0) })
      res.resume()
    })
    req.on('error', () => { resolve(0) })
    req.end(body)
  })
}

/** The flood's requests, each as heavy as a viewer may make it; every one resolves with its status. */
export function floodKinds (baseUrl: string, f: Flooder): FloodKind[] {
  const centre: [number, number] = [(AREA.minX + AREA.maxX) / 2, (AREA.minY + AREA.maxY) / 2]
  // Bodies serialized once.
  const query = Buffer.from(JSON.stringify(HEAVY_QUERY))
  // 20 root fields (GRAPHQL_MAX_ROOT_FIELDS), each the heavy query: they run at once.
  const graphql = Buffer.from(JSON.stringify({
    query: `query ($q: ObjectQuery) { ${Array.from({ length: 20 }, (_, i) => `q${i}: queryObjects(query: $q) { items { id attributes geometry } pagination { total } }`).join(' ')} }`,
    variables: { q: { ...HEAVY_QUERY, limit: 100 } }
  }))
  // Close to MAX_BODY_BYTES (1 MiB): 30,000 distinct items under uniqueItems and a pattern, and a
  // polygon of 4,000 positions for the PostGIS check.
  const validate = Buffer.from(JSON.stringify({
    attributes: { name: 'x', note: 'y'.repeat(4000), parts: Array.from({ length: 30_000 }, (_, i) => ({ a: i, b: `p${i}` })) },
    geometry: { type: 'Polygon', coordinates: [circle(4000, centre, 0.05)] }
  }))
  let tile = 0
  let page = 0
  const call = (method: string, path: string, body?: Buffer) => send(baseUrl, f.token, method, path, body)
  const kinds: FloodKind[] = [
    { key: 'query', name: 'query run, 20 text filters', call: () => call('POST', '/v1/queries/objects/run', query) },
    { key: 'geojson', name: 'GeoJSON page of 10,000', call: () => call('GET', `/v1/layers/objects?layer=${f.slug}&limit=10000&offset=${10_000 * (page++ % Math.max(1, Math.floor(f.objects / 10_000)))}`) },
    { key: 'ndjson', name: 'NDJSON whole layer', call: () => call('GET', `/v1/layers/objects/stream?layer=${f.slug}`) },
    // Zooms 0 to 8 over the area: each holds every polygon; no cache to hit.
    { key: 'tile', name: 'tile z0-z8, cache off', call: () => call('GET', `/v1/layers/tiles/${f.slug}/${tileAt(tile++ % 9, ...centre).join('/')}.mvt`) },
    { key: 'validate', name: 'validate, ~1 MB body', call: () => call('POST', `/v1/object-types/${f.typeId}/validate`, validate) },
    { key: 'graphql', name: 'GraphQL, 20 heavy root fields', call: () => call('POST', '/v1/graphql', graphql) }
  ]
  // BENCH_FLOOD_KINDS=graphql,validate floods with those alone (to see which one a miss comes from).
  const only = (process.env.BENCH_FLOOD_KINDS ?? '').split(',').map(k => k.trim()).filter(Boolean)
  return only.length === 0 ? kinds : kinds.filter(k => only.includes(k.key))
}

interface Start { baseUrl: string, flooder: Flooder, loops: number }
type Answer = [name: string, ms: number, status: number]

/**
 * The flood in a process of its own, ready and not yet sending: `resume` starts its `loops`
 * loops, each sending the kinds in turn; `pause` stops them and resolves, once the requests in
 * flight have answered, with every answer since the last pause; `stop` ends the process.
 */
export async function startFlood (start: Start): Promise<{ pid: number, resume: () => void, pause: () => Promise<Answer[]>, stop: () => void }> {
  const child = fork(new URL(import.meta.url).pathname, [], { execArgv: ['--import', 'tsx'], env: { ...process.env, BENCH_FLOOD_CHILD: '1' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const message = () => new Promise<any>((resolve, reject) => {
    const exit = (code: number | null) => { reject(new Error(`the flood's process exited ${code}`)) }
    child.once('exit', exit)
    child.once('message', m => { child.off('exit', exit); resolve(m) })
  })
  const ready = message()
  child.send(start)
  await ready
  return {
    pid: child.pid!,
    resume: () => { child.send('resume') },
    pause: async () => {
      const answers = message()
      child.send('pause')
      return await answers as Answer[]
    },
    stop: () => { child.kill('SIGTERM') }
  }
}

/** The flood's process: loops that send while resumed, answering each pause with what they timed. */
function floodProcess (): void {
  let kinds: FloodKind[] = []
  let loops = 0
  let sending = false
  let running: Promise<unknown> = Promise.resolve()
  let answers: Answer[] = []
  let next = 0
  const loop = async (): Promise<void> => {
    while (sending) {
      const k = kinds[next++ % kinds.length]
      const t0 = performance.now()
      let status = 0
      try { status = await k.call() } catch { /* no answer: status 0 */ }
      answers.push([k.name, performance.now() - t0, status])
    }
  }
  process.on('message', (m: Start | 'pause' | 'resume') => {
    if (m === 'resume') {
      sending = true
      running = Promise.all(Array.from({ length: loops }, loop))
    } else if (m === 'pause') {
      sending = false
      void running.then(() => { process.send!(answers); answers = [] })
    } else {
      kinds = floodKinds(m.baseUrl, m.flooder)
      loops = m.loops
      process.send!('ready')
    }
  })
}

if (process.env.BENCH_FLOOD_CHILD === '1' && process.send !== undefined) floodProcess()
