import jsonLogic from 'json-logic-js'

// `method` (in some json-logic-js versions) calls arbitrary methods on values: never allowed.
try { jsonLogic.rm_operation('method') } catch { /* absent in this version */ }

const OPERATORS = new Set([
  '==', '===', '!=', '!==', '>', '>=', '<', '<=', '!!', '!', '%', 'in', 'cat', 'substr', '+', '*', '-', '/',
  'min', 'max', 'merge', 'var', 'missing', 'missing_some', 'if', '?:', 'and', 'or', 'filter', 'map', 'reduce',
  'all', 'none', 'some'
])
const MAX_DEPTH = 32

/** Checks a JsonLogic expression is well formed: known operators only, bounded depth. */
export function checkLogic (rule: unknown, path: string, depth = 0): { path: string, reason: string } | null {
  if (depth > MAX_DEPTH) return { path, reason: `nests deeper than ${MAX_DEPTH}` }
  if (Array.isArray(rule)) {
    for (const [i, r] of rule.entries()) {
      const f = checkLogic(r, `${path}[${i}]`, depth + 1)
      if (f) return f
    }
    return null
  }
  if (rule === null || typeof rule !== 'object') return null
  const keys = Object.keys(rule)
  if (keys.length !== 1) return { path, reason: 'a JsonLogic operation is an object with exactly one operator key' }
  const op = keys[0]
  if (!OPERATORS.has(op)) return { path: `${path}.${op}`, reason: `unknown JsonLogic operator "${op}"` }
  return checkLogic((rule as Record<string, unknown>)[op], `${path}.${op}`, depth + 1)
}

export type LogicResult = { ok: true, value: unknown } | { ok: false, error: string }

/** Evaluates a rule; a throwing rule is reported, never propagated (callers fail closed). */
export function evaluateLogic (rule: unknown, data: unknown): LogicResult {
  try {
    return { ok: true, value: jsonLogic.apply(rule as jsonLogic.RulesLogic, data) }
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) }
  }
}

export function truthy (v: unknown): boolean {
  return jsonLogic.truthy(v)
}
