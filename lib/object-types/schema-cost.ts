import type { Ajv, KeywordDefinition } from 'ajv'

// Tenant attribute schemas are evaluated on the main thread, so every keyword's cost must grow
// with the attributes' size, not faster (docs/behaviour.md "Object types and the schema registry"):
// - uniqueItems: ajv compares every pair of items with a deep equal (5,000 objects: 0.6 s;
//   50,000 numbers without a declared item type: 1.7 s); here each item is hashed once.
// - every other keyword is linear per application, but applications multiply: anyOf/allOf/oneOf
//   branches that each $ref a recursive definition apply it 2^depth times (a 2-way anyOf over
//   20 levels of attributes ran out of memory). Each subschema application is counted against a
//   budget proportional to the attributes' size; past it, validation stops with a fault.

/** Subschema applications one validation may make, per JSON value in the attributes, plus a floor. */
export const APPLICATIONS_PER_VALUE = 100
export const APPLICATIONS_FLOOR = 10_000

/** Thrown from inside ajv when the budget runs out; validateCandidate turns it into a fault. */
export class SchemaBudgetExceeded extends Error {}

// Evaluation is synchronous, so one counter will do (reset by `budgeted`).
let applicationsLeft = 0

/** The counting keyword added to every subschema: its value is the application's weight. */
const COST_KEYWORD = 'x-cost'

/** A canonical text of a JSON value (object keys sorted): equal for the values uniqueItems calls equal. */
function canonical (v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null'
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`
  const keys = Object.keys(v).sort()
  return `{${keys.map(k => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`
}

/** Replaces ajv's uniqueItems (quadratic) and adds the counting keyword, on the tenant instance. */
export function boundKeywords (ajv: Ajv): void {
  ajv.removeKeyword('uniqueItems')
  const uniqueItems: KeywordDefinition = {
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    errors: true,
    validate: function unique (this: unknown, schema: boolean, data: unknown[]): boolean {
      if (!schema) return true
      // The pair ajv's own would name: the last item equal to an earlier one, and the latest such earlier one.
      const last = new Map<string, number>()
      let pair: { i: number, j: number } | null = null
      for (let i = 0; i < data.length; i++) {
        const key = canonical(data[i])
        const j = last.get(key)
        if (j !== undefined) pair = { i, j }
        last.set(key, i)
      }
      if (pair === null) return true
      ;(unique as unknown as { errors: unknown[] }).errors = [{ keyword: 'uniqueItems', params: pair, message: `must NOT have duplicate items (items ## ${pair.j} and ${pair.i} are identical)` }]
      return false
    }
  }
  ajv.addKeyword(uniqueItems)
  ajv.addKeyword({
    keyword: COST_KEYWORD,
    schemaType: 'number',
    errors: false,
    validate: (weight: number) => {
      if ((applicationsLeft -= weight) < 0) throw new SchemaBudgetExceeded()
      return true
    }
  })
}

// Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
const ONE = ['items', 'additionalItems', 'contains', 'additionalProperties', 'propertyNames', 'if', 'then', 'else', 'not', 'unevaluatedItems', 'unevaluatedProperties']
const LIST = ['items', 'allOf', 'anyOf', 'oneOf', 'prefixItems']
const MAP = ['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas', 'dependencies']

/**
 * A copy of a tenant schema with the counting keyword in every subschema, weighted by what one
 * application of it costs beyond its subschemas (an enum compares the value with each member).
 */
export function withCosts (schema: unknown): unknown {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema
  const s = schema as Record<string, unknown>
  const out: Record<string, unknown> = { ...s, [COST_KEYWORD]: 1 + (Array.isArray(s.enum) ? s.enum.length : 0) }
  for (const k of ONE) if (k in s && !Array.isArray(s[k])) out[k] = withCosts(s[k])
  for (const k of LIST) if (Array.isArray(s[k])) out[k] = (s[k] as unknown[]).map(withCosts)
  for (const k of MAP) {
    const m = s[k]
    if (m !== null && typeof m === 'object' && !Array.isArray(m)) {
      out[k] = Object.fromEntries(Object.entries(m).map(([name, sub]) => [name, Array.isArray(sub) ? sub : withCosts(sub)]))
    }
  }
  return out
}

/** JSON values in `v` (each object, array and scalar counts one). */
function valueCount (v: unknown): number {
  if (v === null || typeof v !== 'object') return 1
  let n = 1
  for (const x of Array.isArray(v) ? v : Object.values(v)) n += valueCount(x)
  return n
}

/** Runs `validate` on `data` with the application budget its size allows. */
export function budgeted<T> (data: unknown, validate: () => T): T {
  applicationsLeft = APPLICATIONS_FLOOR + APPLICATIONS_PER_VALUE * valueCount(data)
  return validate()
}
