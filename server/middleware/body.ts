import { MIMEType } from 'node:util'
import coBody from 'co-body'
import { AppError } from '../../lib/errors.js'
import type { RouteRequest } from '../http/route.js'

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * application/json and every `+json` type (RFC 6839), e.g. application/merge-patch+json for a
 * PATCH: all read alike.
 */
function isJsonType (contentType: string): boolean {
  try {
    const t = new MIMEType(contentType)
    return t.essence === 'application/json' || t.subtype.endsWith('+json')
  } catch {
    return false
  }
}

/**
 * The JSON body of a route that declares one, at most MAX_BODY_BYTES, read by co-body (the
 * parser koa-body wraps: strict JSON, prototype keys refused, gzip and deflate undone); as text
 * for a route that reads it off the event loop (RouteSpec.bodyText). A request without a body
 * leaves `req.body` undefined; anything but JSON is refused.
 */
export function jsonBody (maxBodyBytes: number, as: 'parsed' | 'text'): (req: RouteRequest) => Promise<void> | undefined {
  return req => {
    req.state.maxBodyBytes = maxBodyBytes
    const length = Number(req.headers['content-length'] ?? 0)
    if (!WITH_BODY.has(req.method) || (!(length > 0) && req.headers['transfer-encoding'] === undefined)) return undefined
    if (length > maxBodyBytes) throw new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${maxBodyBytes} bytes`, { limit: maxBodyBytes })
    if (!isJsonType(req.header('content-type'))) throw new AppError('BAD_REQUEST', 'Content-Type must be application/json (or another +json type)', { field: 'Content-Type', reason: 'unsupported media type' })
    const read = as === 'text' ? coBody.text(req.raw, { limit: maxBodyBytes }) : coBody.json(req.raw, { limit: maxBodyBytes, strict: true })
    return read.then(body => { req.body = body })
  }
}
