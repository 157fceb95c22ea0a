import '../lib/heap.js'
import { createServer, type ServerResponse } from 'node:http'
import pg from 'pg'
import { queryBytes } from '../lib/fenced/pg.js'
import { FLOOR_BYTES_STATEMENTS, FLOOR_STATEMENTS } from './raw-sql.js'

// The HTTP floor of the core bench: the least an HTTP service can do for each path, run as its
// own process like the API. node:http and a pg pool of 16 (the API's size), nothing else: no
// framework, no authentication, no validation, no metrics. `/q/<name>` runs the raw statement of
// that name (bench/raw-sql.ts) as a prepared statement with the parameters the client sends (a
// JSON array: a GET's `p` query parameter, a POST's body) and answers with the JSON text that
// PostgreSQL built; `/b/<name>` runs a statement of FLOOR_BYTES_STATEMENTS (a vector tile) the way
// the API reads a tile (lib/fenced/pg.ts: binary result, no hex text) and answers with its bytes.
// Whatever separates the API from this is what the API adds.

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 16 })

/** GET /b/<name>?p=[...]: the bytes of a one-column bytea statement. */
function bytes (name: string, params: unknown[], res: ServerResponse): void {
  const text = FLOOR_BYTES_STATEMENTS[name]
  if (text === undefined) { res.writeHead(404).end(); return }
  pool.connect().then(async client => {
    try {
      const parts = await queryBytes(client, `floor.${name}`, text, params)
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': parts.reduce((n, p) => n + p.length, 0) })
      res.cork()
      for (const p of parts) res.write(p)
      res.end()
      res.uncork()
    } finally { client.release() }
  }).catch(err => { res.writeHead(500).end(String(err)) })
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://floor')
  if (url.pathname.startsWith('/b/')) return bytes(url.pathname.slice(3), JSON.parse(url.searchParams.get('p') ?? '[]'), res)
  const name = url.pathname.slice('/q/'.length)
  const text = FLOOR_STATEMENTS[name]
  const answer = (status: number, body: string) => {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) })
    res.end(body)
  }
  const run = (params: unknown[]) => {
    pool.query({ name, text, values: params }).then(
      r => answer(req.method === 'POST' ? 201 : 200, r.rows[0]?.body ?? 'null'),
      err => answer(500, JSON.stringify({ error: String(err) })))
  }
  if (text === undefined) return answer(404, '{"error":"no such statement"}')
  if (req.method === 'GET') return run(JSON.parse(url.searchParams.get('p') ?? '[]'))
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => run(JSON.parse(Buffer.concat(chunks).toString('utf8'))))
})
server.keepAliveTimeout = 60_000
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'))
process.on('SIGTERM', () => { server.close(); void pool.end() })
