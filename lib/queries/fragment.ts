import type { Bindings } from '../db.js'

/**
 * A piece of SQL and its bindings. The `sql` tag is the only way the compiler builds SQL:
 * every interpolated value becomes a `?` placeholder with a binding, so a client value can
 * never become SQL text. Text that is not a binding comes from template literals in this
 * module or from `trusted`, whose arguments are constants chosen in code.
 */
export class Fragment {
  constructor (readonly text: string, readonly params: Bindings) {}
}

type Value = string | number | boolean | null | string[]

export function sql (strings: TemplateStringsArray, ...parts: Array<Fragment | Value>): Fragment {
  let text = strings[0]
  const params: Bindings = []
  parts.forEach((part, i) => {
    if (part instanceof Fragment) {
      text += part.text
      params.push(...part.params)
    } else {
      text += '?'
      params.push(part)
    }
    text += strings[i + 1]
  })
  return new Fragment(text, params)
}

/** SQL text picked from constants in code (column names, keywords, operators): never client input. */
export function trusted (text: string, params: Bindings = []): Fragment {
  return new Fragment(text, params)
}

export function join (parts: Fragment[], separator: ' AND ' | ' OR ' | ', '): Fragment {
  return new Fragment(parts.map(p => p.text).join(separator), parts.flatMap(p => p.params))
}
