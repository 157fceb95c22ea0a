import type { GraphQLFormattedError } from 'graphql'
import type { ApolloServerPlugin } from '@apollo/server'
import { unwrapResolverError } from '@apollo/server/errors'
import { AppError, type ErrorCode } from '../../lib/errors.js'
import { translatePgError } from '../../lib/db.js'
import { STATUS_BY_CODE } from '../http/status.js'
import type { GraphqlContext } from './context.js'

/** Apollo's own codes for a request it could not parse, validate or coerce: the client's fault. */
const CLIENT_FAULTS = new Set(['GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED', 'BAD_USER_INPUT', 'OPERATION_RESOLUTION_FAILURE', 'BAD_REQUEST', 'PERSISTED_QUERY_NOT_SUPPORTED', 'PERSISTED_QUERY_NOT_FOUND'])

/** An error the service means to show: an AppError (after Postgres translation), or null. */
function domainError (error: unknown): AppError | null {
  const translated = translatePgError(unwrapResolverError(error))
  return translated instanceof AppError ? translated : null
}

function shaped (formatted: GraphQLFormattedError, code: ErrorCode, message: string, details: Record<string, unknown>): GraphQLFormattedError {
  return {
    message,
    ...(formatted.locations ? { locations: formatted.locations } : {}),
    ...(formatted.path ? { path: formatted.path } : {}),
    extensions: { code, status: STATUS_BY_CODE[code], details }
  }
}

/**
 * extensions.code is the REST error code and extensions.status the HTTP status REST would answer
 * (the one mapping in server/http/status.ts). Anything unexpected becomes INTERNAL_ERROR with a
 * fixed message: no SQL, no stack (it is logged once by `logUnexpected`).
 */
export function formatError (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const app = domainError(error)
  if (app !== null) return shaped(formatted, app.code, app.message, app.details)
  const code = String(formatted.extensions?.code ?? '')
  if (CLIENT_FAULTS.has(code)) {
    const details = (formatted.extensions?.details ?? {}) as Record<string, unknown>
    return shaped(formatted, 'BAD_REQUEST', formatted.message, details)
  }
  return shaped(formatted, 'INTERNAL_ERROR', 'internal server error', {})
}

/** Neither a domain error nor the client's fault: logged once, answered INTERNAL_ERROR. */
export function isUnexpected (err: { extensions?: Record<string, unknown> } & object): boolean {
  return domainError(err) === null && !CLIENT_FAULTS.has(String(err.extensions?.code ?? ''))
}

/** Logs each unexpected error once, with the request's logger (it carries the request id). */
export function logUnexpected (): ApolloServerPlugin<GraphqlContext> {
  return {
    async requestDidStart () {
      return {
        async didEncounterErrors ({ contextValue, errors }) {
          for (const err of errors) {
            if (isUnexpected(err)) contextValue.service.log.error({ err: unwrapResolverError(err) }, 'unhandled GraphQL error')
          }
        }
      }
    }
  }
}
