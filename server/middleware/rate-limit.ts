import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible'
import type { Redis } from 'ioredis'
import { AppError } from '../../lib/errors.js'
import type { RouteRequest } from '../http/route.js'

export interface RateLimitOptions { ttlSeconds: number, limit: number, redis: Redis | null }

/**
 * Counted per (tenant, sub) when the caller is authenticated, else per client address
 * (docs/behaviour.md "Platform"). In Redis when REDIS_URL is set, so every API process shares the
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

/** RateLimit-Limit, -Remaining and -Reset of a decision, on the request's answer. */
function setLimitHeaders (h: Record<string, string>, limit: number, res: RateLimiterRes): void {
  h['RateLimit-Limit'] = String(limit)
  h['RateLimit-Remaining'] = String(Math.max(0, res.remainingPoints))
  h['RateLimit-Reset'] = String(Math.ceil(res.msBeforeNext / 1000))
}

/**
 * One point per request, keyed by the identity the token named (identify runs first) or the
 * client address. Every answer carries the RateLimit-* headers; over the limit, 429 with Retry-After.
 */
export function rateLimit (limiter: RateLimiterAbstract, limit: number): (req: RouteRequest) => Promise<void> {
  return async req => {
    const id = req.state.identity
    const key = id !== undefined ? `t:${id.tenant}:${id.sub}` : `ip:${req.ip}`
    try {
      setLimitHeaders(req.answerHeaders, limit, await limiter.consume(key))
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res
      const retryAfter = Math.max(1, Math.ceil(res.msBeforeNext / 1000))
      setLimitHeaders(req.answerHeaders, limit, res)
      req.answerHeaders['Retry-After'] = String(retryAfter)
      throw new AppError('RATE_LIMITED', `rate limit of ${limit} requests exceeded; retry in ${retryAfter} s`, { retryAfterSeconds: retryAfter })
    }
  }
}
