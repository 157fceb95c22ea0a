import { AppError, invalidJsonBody } from '../../lib/errors.js'
import { translatePgError } from '../../lib/db.js'
import { STATUS_BY_CODE } from '../http/status.js'
import { JSON_TYPE, type Answer, type RequestState } from '../http/route.js'

/**
 * The one place a thrown value becomes an answer: the error body of docs/behaviour.md "General"
 * with its status. An unknown error is logged once with the request and answered 500 with a
 * fixed message (no stack, no SQL).
 */
export function errorAnswer (raw: unknown, state: RequestState): Answer {
  const err = toAppError(raw, state)
  return errorBody(err)
}

export function errorBody (err: AppError): Answer {
  return { status: STATUS_BY_CODE[err.code], type: JSON_TYPE, body: { error: { code: err.code, message: err.message, details: err.details } } }
}

function toAppError (raw: unknown, state: RequestState): AppError {
  const translated = translatePgError(raw)
  if (translated instanceof AppError) return translated
  const e = raw as { status?: number, type?: string, expose?: boolean, message?: string }
  // Errors from the body parser (co-body / raw-body) carry a status and a type.
  if (e?.status === 413) return new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${state.maxBodyBytes ?? 'the limit of'} bytes`, {})
  // zlib failing on the client's bytes is the client's fault: Z_* for gzip/deflate, and Brotli's
  // format errors (Node names BROTLI_DECODER_ERROR_FORMAT_* as ERR__ERROR_FORMAT_*) for br.
  if (typeof (raw as { code?: unknown })?.code === 'string' && /^(Z_|ERR__ERROR_FORMAT_)/.test((raw as { code: string }).code)) {
    return new AppError('BAD_REQUEST', 'request body could not be decompressed', { field: 'Content-Encoding', reason: 'invalid compressed data' })
  }
  if (e?.status === 400 || e?.status === 415) return e.type === 'entity.parse.failed' || /JSON/i.test(e.message ?? '') ? invalidJsonBody() : new AppError('BAD_REQUEST', e.message ?? 'bad request', {})
  state.log.error({ err: raw }, 'unhandled error')
  return new AppError('INTERNAL_ERROR', 'internal server error', {})
}
