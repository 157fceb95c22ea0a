type Json = Record<string, unknown>

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * RFC 7396 JSON merge patch: objects merge recursively, null removes, anything else replaces.
 * Pure: the target is never mutated. Keys are defined, not assigned, so a "__proto__" key in
 * client JSON stays data instead of replacing the result's prototype.
 */
export function mergePatch (target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch
  const base: Json = isObject(target) ? { ...target } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete base[k]
    else define(base, k, mergePatch(Object.hasOwn(base, k) ? base[k] : undefined, v))
  }
  return base
}

function define (o: Json, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true })
}
