// Match objects (docs/behaviour.md "Automation"): {type:"attribute", path, operator, value}. `path` is a
// small JSON path: `$`, then `.name`, `[n]` or `['name']` steps. No wildcards or filters: a
// match names one value, and the condition (JsonLogic) is there for anything richer.

export type MatchOperator = 'equals' | 'notEquals' | 'in' | 'contains' | 'exists' | 'greaterThan' | 'lessThan'
export interface MatchSpec { type: 'attribute', path: string, operator: MatchOperator, value?: unknown }

const STEP_RE = /^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\])/

/** The path's steps, or null when it is not of the supported form. */
export function parsePath (path: string): string[] | null {
  if (!path.startsWith('$')) return null
  const steps: string[] = []
  let rest = path.slice(1)
  while (rest.length > 0) {
    const m = STEP_RE.exec(rest)
    if (m === null) return null
    steps.push(m[1] ?? m[2] ?? m[3].replace(/\\(.)/g, '$1'))
    rest = rest.slice(m[0].length)
  }
  return steps
}

export function readPath (root: unknown, steps: string[]): unknown {
  let cur = root
  for (const s of steps) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = (cur as Record<string, unknown>)[s]
  }
  return cur
}

function equal (a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

function compare (a: unknown, b: unknown): number | null {
  if (typeof a === 'number' && typeof b === 'number') return a - b
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0
  return null
}

/** One match against the payload; `got` is what the path found (recorded on the run). */
export function evaluateMatch (m: MatchSpec, payload: unknown): { ok: boolean, got: unknown } {
  const got = readPath(payload, parsePath(m.path) ?? [])
  switch (m.operator) {
    case 'exists': return { ok: got !== undefined, got }
    case 'equals': return { ok: got !== undefined && equal(got, m.value), got }
    case 'notEquals': return { ok: !equal(got, m.value), got }
    case 'in': return { ok: Array.isArray(m.value) && m.value.some(v => equal(v, got)), got }
    case 'contains':
      if (typeof got === 'string' && typeof m.value === 'string') return { ok: got.includes(m.value), got }
      return { ok: Array.isArray(got) && got.some(v => equal(v, m.value)), got }
    case 'greaterThan': { const c = compare(got, m.value); return { ok: c !== null && c > 0, got } }
    case 'lessThan': { const c = compare(got, m.value); return { ok: c !== null && c < 0, got } }
  }
}

/** Every match must hold; the first that fails is named. */
export function evaluateMatches (matches: MatchSpec[], payload: unknown): { ok: boolean, detail: unknown } {
  const results = matches.map(m => ({ path: m.path, operator: m.operator, ...evaluateMatch(m, payload) }))
  return { ok: results.every(r => r.ok), detail: results }
}
