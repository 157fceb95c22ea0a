import http from 'node:http'
import { readFileSync } from 'node:fs'
import pg from 'pg'
import type { Db } from '../lib/db.js'
import { sequencePending } from '../lib/audit/index.js'
import { objectJson, VERSION_COLS } from '../lib/objects/index.js'
import { benchTenant, compare, http as call, httpText, row } from './support.js'

// Section `changes` (lib/changes): live delivery and catch-up of the change feed.
// - Latency: N streams (1, 100, 1,000) of one tenant open on the API, all following the same
//   selection; the bench writes one object at a time over HTTP and times, per stream, from the
//   write's request leaving to that stream holding the event; p50 and p99 over every (write,
//   stream). The next write waits until every stream has the last one.
// - Memory: the API's RSS with the 1,000 streams open, minus before they opened, per stream.
// - Catch-up: BENCH_CHANGES_OBJECTS objects (created in batches of 1,000) read back page by page
//   (limit 1,000) over HTTP, against the best raw SQL reading the same rows: one keyset statement
//   per page over audit_events joined to object_versions, building the same JSON in PostgreSQL.

export interface ChangesBenchEnv { db: Db, databaseUrl: string, baseUrl: string, tokenFor: (tenant: string) => string, rounds: number, apiPid: number }

const WRITES = Number(process.env.BENCH_CHANGES_WRITES ?? 30)
const OBJECTS = Number(process.env.BENCH_CHANGES_OBJECTS ?? 50_000)

interface Listener { received: Map<string, number>, req: http.ClientRequest }

/** One SSE stream read with node:http; records when each change (by object id) arrives. */
function listen (baseUrl: string, token: string, since: string, onEvent: () => void): Promise<Listener> {
  return new Promise((resolve, reject) => {
    const received = new Map<string, number>()
    const req = http.get(`${baseUrl}/v1/changes?include=id&since=${since}`, { headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' }, agent: false }, res => {
      if (res.statusCode !== 200) { reject(new Error(`stream: ${res.statusCode}`)); return }
      let buf = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buf += chunk
        let end
        while ((end = buf.indexOf('\n\n')) !== -1) {
          const block = buf.slice(0, end)
          buf = buf.slice(end + 2)
          const data = /\ndata: (.*)/.exec(block)
          if (data !== null) { received.set(JSON.parse(data[1]).objectId, performance.now()); onEvent() }
        }
      })
      resolve({ received, req })
    })
    req.on('error', err => { if ((err as { code?: string }).code !== 'ECONNRESET') reject(err) })
  })
}

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
const at = (xs: number[], q: number): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(q * s.length))] }

async function publishType (env: ChangesBenchEnv, token: string): Promise<string> {
  const t = await call(env, token, 'POST', '/v1/object-types', { key: 'pole', name: 'Pole', attributeSchema: { type: 'object' } })
  await call(env, token, 'POST', `/v1/object-types/${t.id}/publish`, { to: 'published' })
  return t.id
}

async function latency (env: ChangesBenchEnv, streams: number, say: (line: string) => void): Promise<void> {
  const tenant = benchTenant(`changes-live-${streams}`)
  const token = env.tokenFor(tenant)
  const typeId = await publishType(env, token)
  const since = (await call(env, token, 'GET', '/v1/changes?since=now')).nextCursor
  const before = rssMb(env.apiPid)
  let wake = () => {}
  const listeners: Listener[] = []
  for (let i = 0; i < streams; i++) listeners.push(await listen(env.baseUrl, token, since, () => wake()))
  await new Promise(resolve => setTimeout(resolve, 500))
  const perStreamKb = (rssMb(env.apiPid) - before) * 1024 / streams
  const samples: number[] = []
  try {
    for (let w = 0; w < WRITES; w++) {
      const sent = performance.now()
      const id = (await call(env, token, 'POST', '/v1/objects', { typeId, attributes: { w } })).id as string
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`changes: write ${w} not delivered to every stream in 10 s`)), 10_000)
        wake = () => { if (listeners.every(l => l.received.has(id))) { clearTimeout(timer); resolve() } }
        wake()
      })
      for (const l of listeners) samples.push(l.received.get(id)! - sent)
    }
  } finally {
    for (const l of listeners) l.req.destroy()
  }
  say(`changes: write -> event delivered, ${String(streams).padStart(4)} stream(s): p50 ${at(samples, 0.5).toFixed(1)} ms  p99 ${at(samples, 0.99).toFixed(1)} ms  (${samples.length} deliveries)` +
    (streams >= 100 ? `; API RSS +${perStreamKb.toFixed(1)} kB per open stream` : ''))
}

async function catchUp (env: ChangesBenchEnv, say: (line: string) => void): Promise<void> {
  const tenant = benchTenant('changes-catchup')
  const token = env.tokenFor(tenant)
  const typeId = await publishType(env, token)
  for (let n = 0; n < OBJECTS; n += 1000) {
    const items = Array.from({ length: Math.min(1000, OBJECTS - n) }, (_, i) => ({ typeId, attributes: { i: n + i, name: `pole ${n + i}` }, geometry: { type: 'Point', coordinates: [13 + (i % 100) / 100, 52 + Math.floor(i / 100) / 100] } }))
    await call(env, token, 'POST', '/v1/objects/batch', { items })
  }
  await sequencePending(env.db, tenant)
  const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 2 })
  // The same page, keyset on the chain's sequence, the same JSON per change, by hand.
  const raw = `SELECT e.sequence, json_build_object('cursor', e.sequence::text, 'kind', 'created', 'objectId', v.id, 'typeId', v.type_id, 'version', v.version,
      'at', to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'object', ${objectJson('v')})::text AS change
    FROM audit_events e CROSS JOIN LATERAL (SELECT ${VERSION_COLS} FROM object_versions
      WHERE tenant_id = $1 AND object_id = e.resource_id::uuid AND version = (e.data->>'version')::int) v
    WHERE e.tenant_id = $1 AND e.sequence > $2 AND e.resource_type = 'object' ORDER BY e.sequence LIMIT 1000`
  try {
    const first = await pool.query(raw, [tenant, 0])
    const api = JSON.parse(await httpText(env, token, 'GET', '/v1/changes?limit=1000'))
    if (api.changes.length !== first.rows.length || api.changes[999].objectId !== JSON.parse(first.rows[999].change).objectId) throw new Error('changes: the API page is not the raw page')
    const viaApi = async () => {
      const t = performance.now()
      let since = ''
      let n = 0
      for (;;) {
        const page = JSON.parse(await httpText(env, token, 'GET', `/v1/changes?limit=1000${since}`))
        n += page.changes.length
        if (!page.hasMore) break
        since = `&since=${page.nextCursor}`
      }
      if (n !== OBJECTS) throw new Error(`changes: the API paged ${n} changes, not ${OBJECTS}`)
      return n / ((performance.now() - t) / 1000)
    }
    const viaSql = async () => {
      const t = performance.now()
      let after = 0
      let n = 0
      for (;;) {
        const r = await pool.query(raw, [tenant, after])
        if (r.rows.length === 0) break
        n += r.rows.length
        const text = `[${r.rows.map(x => x.change).join(',')}]`
        if (text.length === 0) throw new Error('empty')
        after = Number(r.rows[r.rows.length - 1].sequence)
      }
      return n / ((performance.now() - t) / 1000)
    }
    say(row(`changes: catch-up, ${OBJECTS} changes, pages of 1,000`, await compare(env.rounds, viaApi, viaSql), 'changes/s'))
  } finally {
    await pool.end()
  }
}

export async function benchChanges (env: ChangesBenchEnv, say: (line: string) => void): Promise<void> {
  for (const n of [1, 100, 1000]) await latency(env, n, say)
  await catchUp(env, say)
}
