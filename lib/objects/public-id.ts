/**
 * Renders a publicId template (docs/behaviour.md "Objects"): {{seq}}, {{seq:N}} (zero-padded), {{year}},
 * {{month}}, {{day}} (UTC), {{type.key}}, {{attributes.<name>}}. Pure; the caller supplies the
 * next sequence value only when the template uses one.
 */
export function usesSequence (template: string): boolean {
  return /\{\{\s*seq(:\d+)?\s*\}\}/.test(template)
}

export function renderPublicId (template: string, v: { seq: number | null, now: Date, typeKey: string, attributes: Record<string, unknown> }): string {
  return template.replace(/\{\{\s*([^}]*?)\s*\}\}/g, (_m, token: string) => {
    if (token === 'seq') return String(v.seq)
    const pad = /^seq:(\d+)$/.exec(token)
    if (pad) return String(v.seq).padStart(Number(pad[1]), '0')
    if (token === 'year') return String(v.now.getUTCFullYear())
    if (token === 'month') return String(v.now.getUTCMonth() + 1).padStart(2, '0')
    if (token === 'day') return String(v.now.getUTCDate()).padStart(2, '0')
    if (token === 'type.key') return v.typeKey
    if (token.startsWith('attributes.')) {
      let cur: unknown = v.attributes
      for (const part of token.slice('attributes.'.length).split('.')) {
        // Own properties only: `attributes.constructor` must not reach Object's prototype.
        cur = cur !== null && typeof cur === 'object' && Object.hasOwn(cur, part) ? (cur as Record<string, unknown>)[part] : undefined
      }
      return cur === undefined || cur === null ? '' : typeof cur === 'object' ? JSON.stringify(cur) : String(cur)
    }
    return ''
  })
}
