// One error type for the domain. The codes are exactly those of docs/behaviour.md "General"; lib
// knows no HTTP status: server/middleware/errors.ts (and the GraphQL formatter) map code -> status.

export type ErrorCode =
  | 'VALIDATION_ERROR' | 'BAD_REQUEST' | 'PRECONDITION_REQUIRED'
  | 'UNAUTHORIZED' | 'FORBIDDEN' | 'GUARD_FAILED' | 'LICENSE_LIMIT_EXCEEDED' | 'LICENSE_EXPIRED' | 'FEATURE_DISABLED'
  | 'NOT_FOUND' | 'VERSION_CONFLICT' | 'CONFLICT' | 'INVALID_TRANSITION'
  | 'PAYLOAD_TOO_LARGE' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'NOT_READY'

export class AppError extends Error {
  constructor (
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {}
  ) {
    super(message)
    this.name = 'AppError'
  }
}

export function validationError (field: string, reason: string, extra: Record<string, unknown> = {}): AppError {
  return new AppError('VALIDATION_ERROR', `${field}: ${reason}`, { field, reason, ...extra })
}

/** A request body that does not parse as the API reads JSON (strict: an object or an array). */
export function invalidJsonBody (): AppError {
  return new AppError('BAD_REQUEST', 'request body is not valid JSON', {})
}

export function notFound (resource: string, id: string): never {
  throw new AppError('NOT_FOUND', `${resource} ${id} not found`, { resource, id })
}

export function isAppError (err: unknown): err is AppError {
  return err instanceof AppError
}

/**
 * An AppError that says nothing about the request itself: the database was unreachable or cut the
 * statement off (NOT_READY), or a concurrent change won (VERSION_CONFLICT). A job retries these
 * rather than record them as the run's outcome.
 */
export function isTransient (err: AppError): boolean {
  return err.code === 'NOT_READY' || err.code === 'VERSION_CONFLICT'
}
