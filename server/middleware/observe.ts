import { randomUUID } from 'node:crypto'
import type { Middleware } from 'koa'
import type { Logger } from '../../lib/log.js'
import { httpRequestDuration, httpRequestsTotal } from '../../lib/metrics.js'

const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/

/**
 * Request id, one log line per request, and the HTTP metrics. Runs outermost so it sees the
 * final status, including errors turned into bodies by the errors middleware.
 */
export function observe (log: Logger): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint()
    const sent = ctx.get('X-Request-Id')
    const requestId = SAFE_REQUEST_ID.test(sent) ? sent : randomUUID()
    ctx.state.requestId = requestId
    ctx.state.log = log.child({ requestId }, true)
    ctx.set('X-Request-Id', requestId)
    try {
      await next()
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched'
      const labels = { method: ctx.method, route: String(route), status: String(ctx.status) }
      httpRequestsTotal.inc(labels)
      httpRequestDuration.observe(labels, seconds)
      ctx.state.log.info({ method: ctx.method, route, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1e4) / 10 }, 'request')
    }
  }
}
