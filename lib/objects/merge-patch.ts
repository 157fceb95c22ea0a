/** RFC 7396 JSON merge patch: objects merge recursively, null removes, anything else replaces. */
export function mergePatch (target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch
  const base: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete base[k]
    else base[k] = mergePatch(base[k], v)
  }
  return base
}
