import type { Context, Middleware } from 'koa'
import { AppError } from '../../lib/errors.js'
import { translatePgError } from '../../lib/db.js'
import { STATUS_BY_CODE } from '../http/status.js'

/** Turns any thrown value into CONTRACT's error body. Unknown errors: logged once, fixed 500. */
export function errorBodies (): Middleware {
  return async (ctx, next) => {
    try {
      await next()
      if (ctx.status === 404 && ctx.body == null) throw new AppError('NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`, { path: ctx.path })
      // router.allowedMethods(): 405 for a known path with another method, 501 for a method the
      // router serves nowhere (e.g. PROPFIND). Both get the error body like every other refusal.
      if ((ctx.status === 405 || ctx.status === 501) && ctx.body == null) {
        const what = ctx.status === 405 ? 'is not allowed here' : 'is not implemented'
        writeError(ctx, ctx.status, new AppError('BAD_REQUEST', `method ${ctx.method} ${what}`, { allow: ctx.response.get('Allow') }))
      }
    } catch (raw) {
      const err = toAppError(raw, ctx.state)
      writeError(ctx, STATUS_BY_CODE[err.code], err)
    }
  }
}

/**
 * What errorBodies answers for a thrown value, as status and JSON text: for an HTTP fast path
 * (server/http/hot-writes.ts) that answers a lib error the way the route does.
 */
export function errorAnswer (raw: unknown, state: Record<string, any>): { status: number, body: string } {
  const err = toAppError(raw, state)
  return { status: STATUS_BY_CODE[err.code], body: JSON.stringify(errorBody(err)) }
}

const errorBody = (err: AppError) => ({ error: { code: err.code, message: err.message, details: err.details } })

function writeError (ctx: Context, status: number, err: AppError): void {
  ctx.status = status
  ctx.type = 'application/json'
  ctx.body = errorBody(err)
}

function toAppError (raw: unknown, state: Record<string, any>): AppError {
  const translated = translatePgError(raw)
  if (translated instanceof AppError) return translated
  const e = raw as { status?: number, type?: string, expose?: boolean, message?: string }
  // Errors from the body parser (co-body / raw-body) carry a status and a type.
  if (e?.status === 413) return new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${state.maxBodyBytes ?? 'the limit of'} bytes`, {})
  // zlib (Content-Encoding: gzip/deflate) failing on the client's bytes is the client's fault.
  if (typeof (raw as { code?: unknown })?.code === 'string' && /^Z_/.test((raw as { code: string }).code)) {
    return new AppError('BAD_REQUEST', 'request body could not be decompressed', { field: 'Content-Encoding', reason: 'invalid compressed data' })
  }
  if (e?.status === 400 || e?.status === 415) return new AppError('BAD_REQUEST', e.type === 'entity.parse.failed' || /JSON/i.test(e.message ?? '') ? 'request body is not valid JSON' : (e.message ?? 'bad request'), {})
  state.log?.error({ err: raw }, 'unhandled error')
  return new AppError('INTERNAL_ERROR', 'internal server error', {})
}
