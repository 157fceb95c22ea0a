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
  return id ? `t:${id.tenant}:${id.sub}` : `ip:${ctx.ip}`
}

function setHeaders (ctx: Context, limit: number, res: RateLimiterRes): void {
  ctx.set('RateLimit-Limit', String(limit))
  ctx.set('RateLimit-Remaining', String(Math.max(0, res.remainingPoints)))
  ctx.set('RateLimit-Reset', String(Math.ceil(res.msBeforeNext / 1000)))
}

export function rateLimit (limiter: RateLimiterAbstract, limit: number): Middleware {
  return async (ctx, next) => {
    try {
      setHeaders(ctx, limit, await limiter.consume(rateKey(ctx)))
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
