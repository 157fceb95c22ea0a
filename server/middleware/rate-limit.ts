import type { Context, Middleware } from 'koa'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible'
import type { Redis } from 'ioredis'
import { AppError } from '../../lib/errors.js'

export interface RateLimitOptions { ttlSeconds: number, limit: number, redis: Redis | null }

/**
 * Counted per (tenant, sub) when the caller is authenticated, else per client address
 * (CONTRACT "Platform"). In Redis when REDIS_URL is set, so every API process shares the
 * count; if Redis fails, an in-process limiter takes over rather than refusing traffic.
 */
export function createLimiter (opts: RateLimitOptions): RateLimiterAbstract {
  const memory = new RateLimiterMemory({ points: opts.limit, duration: opts.ttlSeconds, keyPrefix: 'rl' })
  if (opts.redis === null) return memory
  return new RateLimiterRedis({
    storeClient: opts.redis,
    points: opts.limit,
    duration: opts.ttlSeconds,
    keyPrefix: 'rl',
    useRedisPackage: false,
    insuranceLimiter: memory
  })
}

function rateKey (ctx: Context): string {
  const id = ctx.state.identity as { tenant: string, sub: string } | undefined
  return id ? identityKey(id) : `ip:${ctx.ip}`
}

export const identityKey = (id: { tenant: string, sub: string }): string => `t:${id.tenant}:${id.sub}`

/** RateLimit-Limit, -Remaining and -Reset for a decision. */
export function limitHeaders (limit: number, res: RateLimiterRes): Record<string, string> {
  return {
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(Math.max(0, res.remainingPoints)),
    'RateLimit-Reset': String(Math.ceil(res.msBeforeNext / 1000))
  }
}

function setHeaders (ctx: Context, limit: number, res: RateLimiterRes): void {
  ctx.set(limitHeaders(limit, res))
}

/**
 * Set on a request by the HTTP edge's fast path (server/http/tile-hits.ts) when it already
 * consumed the request's point and then handed the request to Koa: the decision is reused, the
 * request is not counted twice.
 */
export const LIMIT_DECIDED = Symbol('rate limit decided')
type Decided = { ok: true, res: RateLimiterRes } | { ok: false, res: unknown }

/** The limiter's decision for `key`, as the fast path keeps it for rateLimit(). */
export async function decide (limiter: RateLimiterAbstract, key: string): Promise<Decided> {
  try { return { ok: true, res: await limiter.consume(key) } } catch (res) { return { ok: false, res } }
}

export function rateLimit (limiter: RateLimiterAbstract, limit: number): Middleware {
  return async (ctx, next) => {
    try {
      const decided = (ctx.req as { [LIMIT_DECIDED]?: Decided })[LIMIT_DECIDED]
      if (decided !== undefined && !decided.ok) throw decided.res
      setHeaders(ctx, limit, decided !== undefined ? decided.res : await limiter.consume(rateKey(ctx)))
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res
      setHeaders(ctx, limit, res)
      const retryAfter = Math.max(1, Math.ceil(res.msBeforeNext / 1000))
      ctx.set('Retry-After', String(retryAfter))
      throw new AppError('RATE_LIMITED', `rate limit of ${limit} requests exceeded; retry in ${retryAfter} s`, { retryAfterSeconds: retryAfter })
    }
    return next()
  }
}
