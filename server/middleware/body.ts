import { Readable } from 'node:stream'
import type { IncomingMessage } from 'node:http'
import type { Middleware } from 'koa'
import { koaBody } from 'koa-body'
import { AppError } from '../../lib/errors.js'

/**
 * Set on a request by an HTTP fast path (server/http/plain-body.ts `handOver`) that read its body and then
 * handed it to Koa: the bytes it read, parsed here by the very parser that would have read them
 * from the socket, so the route answers exactly as if the fast path had not been there.
 */
export const BODY_READ = Symbol('request body read')

/**
 * The media types read as JSON: application/json and every `+json` type (RFC 6839), e.g.
 * application/merge-patch+json for a PATCH. The check and the parser use this one list: a type
 * the check let through and koa-body did not read (its default list is shorter) reached the
 * route as an empty body.
 */
const JSON_TYPES = ['application/json', '+json']

/** JSON bodies only, at most MAX_BODY_BYTES; anything else with a body is refused. */
export function jsonBody (maxBodyBytes: number): Middleware {
  const parse = koaBody({ json: true, jsonTypes: JSON_TYPES, text: false, urlencoded: false, multipart: false, jsonLimit: maxBodyBytes, jsonStrict: true })
  return async (ctx, next) => {
    ctx.state.maxBodyBytes = maxBodyBytes
    if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) || !ctx.request.length && !ctx.get('Transfer-Encoding')) {
      ctx.request.body = undefined
      return next()
    }
    if (ctx.request.length > maxBodyBytes) throw new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${maxBodyBytes} bytes`, { limit: maxBodyBytes })
    if (!ctx.is(JSON_TYPES)) throw new AppError('BAD_REQUEST', 'Content-Type must be application/json (or another +json type)', { field: 'Content-Type', reason: 'unsupported media type' })
    const read = (ctx.req as { [BODY_READ]?: Buffer })[BODY_READ]
    if (read === undefined) return parse(ctx, next)
    // The parser reads ctx.req: give it the bytes already read, with the request's headers.
    return parse(Object.create(ctx, { req: { value: replay(ctx.req, read) } }), next)
  }
}

function replay (req: IncomingMessage, bytes: Buffer): Readable {
  return Object.assign(Readable.from([bytes], { objectMode: false }), { headers: req.headers })
}
