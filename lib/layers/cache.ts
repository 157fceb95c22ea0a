import { hash } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { Redis } from 'ioredis'
import { gzipEtag, type Encoding, type Rendering } from './encoding.js'

/**
 * Server-side store of rendered exports (tiles, GeoJSON pages). Keys are derived by
 * `renderKey` from everything that shapes the answer (README "Caching"), so an entry is never
 * invalidated: a change makes new requests compute a new key, and the old entry ages out
 * within its TTL. Shared by every API process through Redis when REDIS_URL is set; a bounded
 * in-process LRU otherwise.
 */
export interface RenderCache {
  readonly kind: 'redis' | 'memory'
  /** The kept rendering in one coding (lib/layers encoding.ts), or undefined on a miss. */
  get (key: string, encoding: Encoding): Promise<Buffer | undefined>
  set (key: string, value: Rendering, ttlSeconds: number): Promise<void>
}

/** In-process store: at most `maxBytes` of renderings, both codings counted (least recently used go first). */
export function memoryCache (maxBytes = 64 * 1024 * 1024): RenderCache {
  // +64 per entry: the key and bookkeeping; also keeps empty tiles (0 bytes) sized above zero.
  // ttlResolution 0: read the clock on each TTL check rather than keep it for 1 ms behind a timer
  // (under load that timer fires every millisecond).
  const lru = new LRUCache<string, Rendering>({ maxSize: maxBytes, sizeCalculation: v => v.identity.length + v.gzip.length + 64, ttlResolution: 0 })
  return {
    kind: 'memory',
    async get (key, encoding) { return lru.get(key)?.[encoding] },
    async set (key, value, ttlSeconds) { lru.set(key, { identity: own(value.identity), gzip: own(value.gzip) }, { ttl: ttlSeconds * 1000 }) }
  }
}

/**
 * The bytes in a buffer of their own, of their size. A cold tile arrives as views of the socket's
 * reads (lib/db preparedBytes), each 64 KiB or more, and a small buffer (a small tile, its gzip
 * coding) is a slice of node's shared 8 KiB pool: kept as it is, an entry would hold all of that
 * for its lifetime, unseen by the count `maxBytes` bounds (the API's memory grew by hundreds of
 * MB in ten minutes of tiles). allocUnsafeSlow never takes from the pool.
 */
function own (b: Buffer): Buffer {
  if (b.byteLength === b.buffer.byteLength) return b
  const copy = Buffer.allocUnsafeSlow(b.byteLength)
  b.copy(copy)
  return copy
}

/**
 * Redis store: each coding under a key of its own (identity under `key`, gzip under `key:gz`),
 * both written together with the same lifetime, so a hit fetches only the bytes it sends. A
 * Redis failure is a cache miss (the answer is rendered from the database), never a failed
 * request; so is a coding evicted without the other.
 */
export function redisCache (redis: Redis): RenderCache {
  const keyOf = (key: string, encoding: Encoding) => encoding === 'gzip' ? `${key}:gz` : key
  return {
    kind: 'redis',
    async get (key, encoding) {
      try { return (await redis.getBuffer(keyOf(key, encoding))) ?? undefined } catch { return undefined }
    },
    async set (key, value, ttlSeconds) {
      try {
        await redis.multi().set(key, value.identity, 'EX', ttlSeconds).set(keyOf(key, 'gzip'), value.gzip, 'EX', ttlSeconds).exec()
      } catch { /* a miss next time */ }
    }
  }
}

export function createRenderCache (redis: Redis | null): RenderCache {
  return redis === null ? memoryCache() : redisCache(redis)
}

/**
 * The cache key and the strong ETags of one answer (identity and gzip codings). `parts` must
 * hold everything the answer depends on; the tenant leads the key so a tenant's entries can
 * never be found by another.
 */
export function renderKey (tenantId: string, parts: unknown[]): RenderKey {
  const text = JSON.stringify([tenantId, ...parts])
  let k = recentKeys.get(text)
  if (k === undefined) {
    // One-shot crypto.hash: no Hash object per call (a cold tile's key text is always new).
    const digest = hash('sha256', text, 'base64url')
    const etag = `"${digest.slice(0, 32)}"`
    k = { key: `layers:${tenantId}:${digest}`, etag, gzipEtag: gzipEtag(etag) }
    if (recentKeys.size >= 10_000) recentKeys.clear()
    recentKeys.set(text, k)
  }
  return k
}

// The digests of recent key texts: a warm tile asks for the same key again and again. The text
// is the whole input, so a hit is exactly the digest that would be computed.
const recentKeys = new Map<string, RenderKey>()

export interface RenderKey { key: string, etag: string, gzipEtag: string }

/** If-None-Match (a list, `*`, weak or strong tags) against our ETag, by weak comparison (RFC 9110). */
export function matchesIfNoneMatch (header: string | undefined, etag: string): boolean {
  if (header === undefined || header.trim() === '') return false
  if (header.trim() === '*') return true
  return header.split(',').some(t => t.trim().replace(/^W\//, '') === etag)
}
