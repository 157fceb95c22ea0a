import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { AppError } from './errors.js'
import { textFault } from './storable.js'

const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv }

// Request schemas are written in the subset shared by JSON Schema and OpenAPI 3.0 (`nullable`
// instead of type arrays, no `const`), so the very same objects validate requests and make up
// the OpenAPI document. `example` and `x-*` are annotations for the document only.
export const ajv = new Ajv({ allErrors: true, strict: true, useDefaults: false })
addFormats.default(ajv)
ajv.addKeyword('example')
ajv.addKeyword('x-field-path')

// Query strings arrive as text: a second instance coerces "10" -> 10 for query schemas.
export const queryAjv = new Ajv({ allErrors: true, strict: true, coerceTypes: true, useDefaults: true })
addFormats.default(queryAjv)
queryAjv.addKeyword('example')

const compiled = new WeakMap<object, ValidateFunction>()
const compiledQuery = new WeakMap<object, ValidateFunction>()

/** `attributes/height` + missingProperty -> `attributes.height`, `filters/0/op` -> `filters[0].op`. */
export function errorPath (e: ErrorObject, prefix = ''): string {
  const parts = e.instancePath.split('/').slice(1).map(p => p.replace(/~1/g, '/').replace(/~0/g, '~'))
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty: string }).missingProperty))
  if (e.keyword === 'additionalProperties') parts.push(String((e.params as { additionalProperty: string }).additionalProperty))
  let path = prefix
  for (const p of parts) path += /^\d+$/.test(p) ? `[${p}]` : (path === '' ? p : `.${p}`)
  return path === '' ? '(body)' : path
}

function reason (e: ErrorObject): string {
  if (e.keyword === 'additionalProperties') return 'is not an allowed field'
  if (e.keyword === 'required') return 'is required'
  return e.message ?? 'is invalid'
}

export function ajvErrors (errors: ErrorObject[] | null | undefined, prefix = ''): Array<{ field: string, reason: string }> {
  return (errors ?? []).map(e => ({ field: errorPath(e, prefix), reason: reason(e) }))
}

function fail (errors: ErrorObject[] | null | undefined, prefix: string): never {
  const list = ajvErrors(errors, prefix)
  const first = list[0] ?? { field: prefix || '(body)', reason: 'is invalid' }
  throw new AppError('VALIDATION_ERROR', `${first.field} ${first.reason}`, { ...first, errors: list })
}

/** Validates `data` against a request schema; VALIDATION_ERROR names the path of the first fault. */
export function parse<T> (schema: object, data: unknown, prefix = ''): T {
  let validate = compiled.get(schema)
  if (!validate) { validate = ajv.compile(schema); compiled.set(schema, validate) }
  if (!validate(data)) fail(validate.errors, prefix)
  return data as T
}

// ajv coerces any text Number() reads: '0x10' and ' 1', and '1e400' as Infinity, which then
// passes minimum and maximum unchecked (strict numbers skip the bounds of a non-finite value, and
// the type is not checked again after coercion). A number in a query string is decimal text of a
// finite number.
const DECIMAL = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

/** What a declared parameter's text cannot be, beyond its schema; null when it is fine. */
function parameterFault (type: unknown, v: string): string | null {
  if ((type === 'integer' || type === 'number') && !(DECIMAL.test(v) && Number.isFinite(Number(v)))) {
    return `must be ${type === 'integer' ? 'an integer' : 'a number'} in decimal digits`
  }
  // Parameters are compared with stored text, which holds no NUL (nor a lone surrogate): Postgres
  // refuses one in a statement, and its refusal could not name the parameter.
  return textFault(v)
}

function assertQueryText (schema: object, query: Record<string, unknown>): void {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {}
  for (const [k, v] of Object.entries(query)) {
    const reason = properties[k] === undefined || typeof v !== 'string' ? null : parameterFault(properties[k].type, v)
    if (reason !== null) throw new AppError('VALIDATION_ERROR', `${k} ${reason}`, { field: k, reason, errors: [{ field: k, reason }] })
  }
}

/** Like parse, for query strings: coerces types and fills defaults on a copy. */
export function parseQuery<T> (schema: object, query: Record<string, unknown>): T {
  let validate = compiledQuery.get(schema)
  if (!validate) { validate = queryAjv.compile(schema); compiledQuery.set(schema, validate) }
  const copy: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(query)) copy[k] = Array.isArray(v) ? v[v.length - 1] : v
  assertQueryText(schema, copy)
  if (!validate(copy)) fail(validate.errors, '')
  return copy as T
}
