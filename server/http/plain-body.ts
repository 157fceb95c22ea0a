import type { IncomingMessage } from 'node:http'
import { BODY_READ } from '../middleware/body.js'

// The request bodies the HTTP fast paths (hot-writes.ts, hot-ingress.ts) read themselves: plain
// JSON text that the route's parser (koa-body in strict mode, @hapi/bourne refusing prototype
// keys) would read to the very same value. Anything else goes to the route: before the body is
// read when the headers already say so, else with the bytes read (`handOver`), which the route's
// own parser then reads (middleware/body.ts), so the route answers exactly as if the fast path
// had not been there.

const PLAIN_TYPE = /^application\/json(?:\s*;\s*charset\s*=\s*"?utf-8"?)?\s*$/i
// Strict mode takes an object or an array; the fast paths take objects only (an array, which
// every one of their routes refuses, goes to the route).
const OPENS_OBJECT = /^[\x20\x09\x0a\x0d]*\{/
// What bourne looks at beyond JSON.parse (a prototype key, also written with \u escapes), and
// bytes that were not UTF-8.
const NOT_PLAIN_TEXT = /__proto__|constructor|\\u|\uFFFD/

/** The body's announced length when the headers are plain (JSON in UTF-8, a length within `max`, no coding); else null. */
export function plainLength (req: IncomingMessage, max: number): number | null {
  const h = req.headers
  if (h['content-encoding'] !== undefined || h['transfer-encoding'] !== undefined || !PLAIN_TYPE.test(h['content-type'] ?? '')) return null
  const text = h['content-length'] ?? ''
  const length = Number(text)
  return /^\d+$/.test(text) && length > 0 && length <= max ? length : null
}

/** The body's bytes as received (fewer than announced when the client went away). */
export function readBody (req: IncomingMessage): Promise<Buffer> {
  return new Promise(resolve => {
    const chunks: Buffer[] = []
    const done = () => { resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)) }
    req.on('data', (c: Buffer) => chunks.push(c))
    req.once('end', done)
    req.once('error', done)
    req.once('aborted', done)
  })
}

/** The parsed body when all `length` bytes came and are plain JSON text of an object, else undefined. */
export function plainJson (bytes: Buffer, length: number): unknown {
  if (bytes.length !== length || bytes[0] === 0xef) return undefined // short, or a BOM (which the route's decoder drops)
  const text = bytes.toString('utf8')
  if (!OPENS_OBJECT.test(text) || NOT_PLAIN_TEXT.test(text)) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Leaves a request whose body was read to the route: its parser reads these bytes. */
export function handOver (req: IncomingMessage, bytes: Buffer): IncomingMessage {
  (req as { [BODY_READ]?: Buffer })[BODY_READ] = bytes
  return req
}
