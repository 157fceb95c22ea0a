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
      if (ctx.status === 405 && ctx.body == null) {
        writeError(ctx, 405, new AppError('BAD_REQUEST', `method ${ctx.method} is not allowed here`, { allow: ctx.response.get('Allow') }))
      }
    } catch (raw) {
      const err = toAppError(raw, ctx)
      writeError(ctx, STATUS_BY_CODE[err.code], err)
    }
  }
}

function writeError (ctx: Context, status: number, err: AppError): void {
  ctx.status = status
  ctx.type = 'application/json'
  ctx.body = { error: { code: err.code, message: err.message, details: err.details } }
}

function toAppError (raw: unknown, ctx: Context): AppError {
  const translated = translatePgError(raw)
  if (translated instanceof AppError) return translated
  const e = raw as { status?: number, type?: string, expose?: boolean, message?: string }
  // Errors from the body parser (co-body / raw-body) carry a status and a type.
  if (e?.status === 413) return new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${ctx.state.maxBodyBytes ?? 'the limit of'} bytes`, {})
  if (e?.status === 400 || e?.status === 415) return new AppError('BAD_REQUEST', e.type === 'entity.parse.failed' || /JSON/i.test(e.message ?? '') ? 'request body is not valid JSON' : (e.message ?? 'bad request'), {})
  ctx.state.log?.error({ err: raw }, 'unhandled error')
  return new AppError('INTERNAL_ERROR', 'internal server error', {})
}
