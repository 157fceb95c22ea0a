import { AppError } from '../../lib/errors.js'
import type { RouteRequest } from './route.js'

// If-Match accepts 3, "3" or W/"3" (docs/behaviour.md "Objects") and nothing else: an unbalanced
// quote (`"3`, `3"`) or an unquoted weak tag (`W/3`) is a bad request, not version 3.
const IF_MATCH_RE = /^(?:(\d{1,9})|(?:W\/)?"(\d{1,9})")$/

export function readIfMatch (req: RouteRequest): number | null {
  const raw = req.header('If-Match').trim()
  if (raw === '') return null
  const m = IF_MATCH_RE.exec(raw)
  if (!m) throw new AppError('BAD_REQUEST', 'If-Match must be a version number such as "3"', { field: 'If-Match', reason: 'not a version' })
  return Number(m[1] ?? m[2])
}

export function requireIfMatch (req: RouteRequest): number {
  const v = readIfMatch(req)
  if (v === null) throw new AppError('PRECONDITION_REQUIRED', 'If-Match header with the current version is required', { field: 'If-Match', reason: 'missing' })
  return v
}
