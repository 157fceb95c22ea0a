import { validationError } from './errors.js'

// What JSON-in-PostgreSQL cannot hold exactly, checked once for every module that stores client
// JSON (object attributes and type definitions, relation metadata, query values), so a value
// Postgres would refuse (a 500) or silently change is a 400 naming its path instead.

export interface StorableFault { field: string, reason: string }

// Deeper JSON is refused before anything recurses through it (merge patch, JSON.stringify and
// Postgres all recurse, and a 1 MiB body can nest hundreds of thousands of levels).
export const MAX_JSON_DEPTH = 64

// Lone UTF-16 surrogates (JSON "\ud800") have no UTF-8 form; jsonb and text refuse them.
const LONE_SURROGATE = /\p{Cs}/u

export function textFault (s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain NUL characters (\\u0000)'
  if (LONE_SURROGATE.test(s)) return 'must be valid Unicode (a lone surrogate such as \\ud800 cannot be stored)'
  return null
}

/**
 * The first value JSON-in-Postgres cannot hold exactly: a non-finite number (JSON 1e400 parses
 * as Infinity and would be stored as null), a NUL character or lone surrogate (jsonb and text
 * refuse them), or nesting deeper than MAX_JSON_DEPTH.
 */
export function unstorableValue (v: unknown, path: string, depth = 0): StorableFault | null {
  if (typeof v === 'number') return Number.isFinite(v) ? null : { field: path, reason: 'must be a finite number' }
  if (typeof v === 'string') {
    const reason = textFault(v)
    return reason === null ? null : { field: path, reason }
  }
  if (v === null || typeof v !== 'object') return null
  if (depth >= MAX_JSON_DEPTH) return { field: path, reason: `nests deeper than ${MAX_JSON_DEPTH} levels` }
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) {
      const f = unstorableValue(x, `${path}[${i}]`, depth + 1)
      if (f) return f
    }
    return null
  }
  for (const [k, x] of Object.entries(v)) {
    const kf = textFault(k)
    if (kf !== null) return { field: path === '' ? '(body)' : path, reason: `keys ${kf}` }
    const f = unstorableValue(x, path === '' ? k : `${path}.${k}`, depth + 1)
    if (f) return f
  }
  return null
}

/**
 * True when `v` holds objects or arrays nested more than MAX_JSON_DEPTH levels (the walk stops
 * there): for JSON that is not stored but must be bounded before anything recurses through it
 * (GraphQL variables).
 */
export function nestsTooDeep (v: unknown, levels = MAX_JSON_DEPTH): boolean {
  if (v === null || typeof v !== 'object') return false
  return levels === 0 || Object.values(v).some(x => nestsTooDeep(x, levels - 1))
}

/** Throws VALIDATION_ERROR at the first unstorable value below `path`. */
export function assertStorable (v: unknown, path: string): void {
  const bad = unstorableValue(v, path)
  if (bad) throw validationError(bad.field, bad.reason)
}
