// Templates in effects (docs/behaviour.md "Automation"): {{object.id}}, {{object.typeId}},
// {{object.workflowState}}, {{object.attributes.<field>}}, {{now}}, {{tenant}},
// {{payload.<path>}}, {{rule.id}}, {{run.id}}. A string that is exactly one template takes the
// value as is (a number stays a number in a JSON body); a template inside text is stringified.
// A template naming a missing value fails the run with that name: never "undefined" on the wire.

const TEMPLATE_RE = /\{\{\s*([^{}]*?)\s*\}\}/g
const WHOLE_RE = /^\{\{\s*([^{}]*?)\s*\}\}$/
const VARIABLE_RE = /^(now|tenant|rule\.id|run\.id|object\.(id|typeId|workflowState|publicId|version)|object\.attributes\.[^\s.][^\s]*|payload(\.[^\s.][^\s]*)?)$/

export interface TemplateScope {
  object: Record<string, unknown> | null
  payload: unknown
  tenant: string
  ruleId: string
  runId: string
  now: string
}

export class TemplateError extends Error {
  constructor (readonly variable: string, readonly path: string) {
    super(`template {{${variable}}} at ${path} names a missing value`)
  }
}

/** The first unknown template variable in `value` (walking objects and arrays), with its path. */
export function findBadTemplate (value: unknown, path: string): { path: string, reason: string } | null {
  if (typeof value === 'string') {
    for (const m of value.matchAll(TEMPLATE_RE)) {
      if (!VARIABLE_RE.test(m[1])) return { path, reason: `unknown template variable {{${m[1]}}}; use object.*, payload.*, now, tenant, rule.id or run.id` }
    }
    return null
  }
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const bad = findBadTemplate(v, `${path}[${i}]`)
      if (bad) return bad
    }
    return null
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const bad = findBadTemplate(v, `${path}.${k}`)
      if (bad) return bad
    }
  }
  return null
}

export function usesObject (value: unknown): boolean {
  return JSON.stringify(value ?? null).includes('{{') && /\{\{\s*object\./.test(JSON.stringify(value))
}

function walk (root: unknown, parts: string[]): unknown {
  let cur = root
  for (const p of parts) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = Array.isArray(cur) && /^\d+$/.test(p) ? cur[Number(p)] : (cur as Record<string, unknown>)[p]
  }
  return cur
}

function lookup (variable: string, s: TemplateScope): unknown {
  if (variable === 'now') return s.now
  if (variable === 'tenant') return s.tenant
  if (variable === 'rule.id') return s.ruleId
  if (variable === 'run.id') return s.runId
  const [root, ...rest] = variable.split('.')
  if (root === 'payload') return walk(s.payload, rest)
  return s.object === null ? undefined : walk(s.object, rest)
}

function resolve (variable: string, s: TemplateScope, path: string): unknown {
  const v = lookup(variable, s)
  if (v === undefined) throw new TemplateError(variable, path)
  return v
}

/** Fills every template in `value`; throws TemplateError on a missing value. */
export function render (value: unknown, s: TemplateScope, path: string): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE_RE.exec(value)
    if (whole) return resolve(whole[1], s, path)
    return value.replace(TEMPLATE_RE, (_m, variable: string) => {
      const v = resolve(variable, s, path)
      return typeof v === 'string' ? v : JSON.stringify(v)
    })
  }
  if (Array.isArray(value)) return value.map((v, i) => render(v, s, `${path}[${i}]`))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, render(v, s, `${path}.${k}`)]))
  }
  return value
}

/** Like render, for a value that must end up as text (a URL, a header, an object id). */
export function renderText (value: string, s: TemplateScope, path: string): string {
  const v = render(value, s, path)
  return typeof v === 'string' ? v : JSON.stringify(v)
}
