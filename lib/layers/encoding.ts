import { promisify } from 'node:util'
import { gzip } from 'node:zlib'

// Content codings of kept renderings (README "Caching"). A rendering that is kept (server cache
// on) is gzip-compressed once, when it is rendered, and kept in both codings: a hit is answered
// with the bytes as kept, gzip to clients whose Accept-Encoding allows it (browsers running
// MapLibre always send it), identity to the others. A rendering that is not kept (TTL 0, no
// cache) goes out as identity: compressing on every request is CPU a cold tile must not pay.
// Each coding is its own representation (RFC 9110 8.8.3): its own strong ETag, `Vary:
// Accept-Encoding`, and a 304 only for the ETag of the coding the client would get.

export type Encoding = 'gzip' | 'identity'

/** What the cache keeps of one rendering. */
export interface Rendering { identity: Buffer, gzip: Buffer }

const gzipAsync = promisify(gzip)

// Level 4: tiles compress about alike at every level (uuids as ids: much of a tile is
// incompressible), and 4 comes close to 9's size at a fraction of 6's time (docs/performance.md).
const LEVEL = 4

/** Both codings of `identity`; the compression runs on libuv's pool, off the event loop. */
export async function encodeRendering (identity: Buffer): Promise<Rendering> {
  return { identity, gzip: await gzipAsync(identity, { level: LEVEL }) }
}

/** The strong ETag of the gzip coding of the representation whose identity ETag is `etag`. */
export function gzipEtag (etag: string): string {
  return `${etag.slice(0, -1)}-gzip"`
}

// Clients send the same few header values again and again: the answer is kept per value.
const recent = new Map<string, boolean>()

/**
 * Whether Accept-Encoding allows gzip (RFC 9110 12.5.3): `gzip` or `x-gzip` with a non-zero
 * weight, else `*` with a non-zero weight when gzip is not listed. No header: identity only.
 */
export function acceptsGzip (header: string | undefined): boolean {
  if (header === undefined || header === '') return false
  let ok = recent.get(header)
  if (ok === undefined) {
    ok = parseAcceptsGzip(header)
    if (recent.size >= 1000) recent.clear()
    recent.set(header, ok)
  }
  return ok
}

function parseAcceptsGzip (header: string): boolean {
  let star: boolean | null = null
  for (const item of header.split(',')) {
    const [name, ...params] = item.split(';').map(s => s.trim().toLowerCase())
    const q = params.find(p => p.startsWith('q='))
    const weight = q === undefined ? 1 : Number(q.slice(2))
    const allowed = Number.isFinite(weight) && weight > 0
    if (name === 'gzip' || name === 'x-gzip') return allowed
    if (name === '*') star = allowed
  }
  return star === true
}
