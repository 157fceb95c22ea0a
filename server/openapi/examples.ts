import { createHash } from 'node:crypto'
import type { RouteExample } from '../http/route.js'

/**
 * Placeholders in route examples: `{objectId}` stands for a value an earlier example saved (or
 * the caller supplies). `{{seq}}`-style template tokens of the product are not placeholders (the
 * doubled braces are excluded).
 */
const PLACEHOLDER = /(?<!\{)\{([A-Za-z][A-Za-z0-9]*)\}(?!\})/g

/** What the document shows for a placeholder: a fixed UUID for ids (valid against format: uuid), else `{name}`. */
export function placeholderSample (name: string): string {
  if (!name.endsWith('Id')) return `{${name}}`
  const h = createHash('sha256').update(`example:${name}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`
}

/** A deep copy with every placeholder replaced by its sample; `used` collects the names met. */
export function renderPlaceholders<T> (value: T, used: Set<string>): T {
  if (typeof value === 'string') {
    return value.replace(PLACEHOLDER, (_m, name: string) => { used.add(name); return placeholderSample(name) }) as T
  }
  if (Array.isArray(value)) return value.map(v => renderPlaceholders(v, used)) as T
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderPlaceholders(v, used)])) as T
  }
  return value
}

/** The operation's `x-example`: what the standard example fields cannot say (status, order, saved values). */
export function exampleExtension (e: RouteExample, used: Set<string>): object {
  return renderPlaceholders({
    summary: e.summary,
    status: e.status,
    ...(e.bearer ? { bearer: e.bearer } : {}),
    ...(e.saves ? { saves: e.saves } : {}),
    ...(e.after ? { after: e.after } : {}),
    ...(e.setup ? { setup: e.setup } : {})
  }, used)
}
