import type { Middleware } from 'koa'
import { koaBody } from 'koa-body'
import { AppError } from '../../lib/errors.js'

/** JSON bodies only, at most MAX_BODY_BYTES; anything else with a body is refused. */
export function jsonBody (maxBodyBytes: number): Middleware {
  const parse = koaBody({ json: true, text: false, urlencoded: false, multipart: false, jsonLimit: maxBodyBytes, jsonStrict: true })
  return async (ctx, next) => {
    ctx.state.maxBodyBytes = maxBodyBytes
    if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) || !ctx.request.length && !ctx.get('Transfer-Encoding')) {
      ctx.request.body = undefined
      return next()
    }
    if (ctx.request.length > maxBodyBytes) throw new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${maxBodyBytes} bytes`, { limit: maxBodyBytes })
    if (!ctx.is('application/json', '+json')) throw new AppError('BAD_REQUEST', 'Content-Type must be application/json', { field: 'Content-Type', reason: 'unsupported media type' })
    return parse(ctx, next)
  }
}
