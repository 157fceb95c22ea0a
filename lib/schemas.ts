// Shared JSON Schemas (the OpenAPI 3.0 subset; see lib/validation.ts).

export const Uuid = { type: 'string', format: 'uuid' } as const
export const Timestamp = { type: 'string', format: 'date-time', example: '2026-01-02T03:04:05.678Z' } as const

export const PagingQuery = {
  limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1..1000' },
  // The upper bound keeps offsets inside Postgres' bigint (a larger one would fail there, a 500).
  offset: { type: 'integer', minimum: 0, maximum: 2147483647, default: 0, description: 'Items to skip, 0..2147483647' }
} as const

export const SortOrder = { type: 'string', enum: ['asc', 'desc'], default: 'asc' } as const

export function envelope (item: object): object {
  return {
    type: 'object',
    required: ['items', 'pagination'],
    properties: {
      items: { type: 'array', items: item },
      pagination: {
        type: 'object',
        required: ['limit', 'offset', 'total', 'hasMore'],
        properties: {
          limit: { type: 'integer' },
          offset: { type: 'integer' },
          total: { type: 'integer' },
          hasMore: { type: 'boolean' },
          totalExact: { type: 'boolean', description: 'Present (false) only when total is the planner\'s estimate of a filtered result above 10,000 items' }
        }
      }
    }
  }
}

export interface Page<T> {
  items: T[]
  pagination: { limit: number, offset: number, total: number, hasMore: boolean, totalExact?: false }
}

type Pagination = Page<unknown>['pagination']

/**
 * The envelope's pagination for a page of `count` items. `more` says whether rows follow the page
 * (read as one row beyond it); without it, the total decides. An estimated total (exact false) is
 * kept consistent with the page and flagged `totalExact: false` (docs/behaviour.md "Lists").
 */
export function pagination (count: number, limit: number, offset: number, total: number, opts: { exact?: boolean, more?: boolean } = {}): Pagination {
  const hasMore = opts.more ?? offset + count < total
  if (opts.exact !== false) return { limit, offset, total, hasMore }
  return { limit, offset, total: Math.max(total, offset + count + (hasMore ? 1 : 0)), hasMore, totalExact: false }
}

export function page<T> (items: T[], limit: number, offset: number, total: number, opts: { exact?: boolean, more?: boolean } = {}): Page<T> {
  return { items, pagination: pagination(items.length, limit, offset, total, opts) }
}

/** The envelope as JSON text around items already serialised (by PostgreSQL) as a JSON array. */
export function pageJson (itemsJson: string, p: Pagination, extra: Record<string, unknown> = {}): string {
  let out = `{"items":${itemsJson},"pagination":${JSON.stringify(p)}`
  for (const [k, v] of Object.entries(extra)) out += `,${JSON.stringify(k)}:${JSON.stringify(v)}`
  return out + '}'
}

export const ErrorBody = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: {
        code: {
          type: 'string',
          enum: ['VALIDATION_ERROR', 'BAD_REQUEST', 'PRECONDITION_REQUIRED', 'UNAUTHORIZED', 'FORBIDDEN', 'GUARD_FAILED',
            'LICENSE_LIMIT_EXCEEDED', 'LICENSE_EXPIRED', 'FEATURE_DISABLED', 'NOT_FOUND', 'VERSION_CONFLICT', 'CONFLICT',
            'INVALID_TRANSITION', 'PAYLOAD_TOO_LARGE', 'RATE_LIMITED', 'INTERNAL_ERROR', 'NOT_READY']
        },
        message: { type: 'string' },
        details: { type: 'object', additionalProperties: true, description: 'e.g. {field, reason}; VALIDATION_ERROR adds errors[]' }
      }
    }
  }
} as const
