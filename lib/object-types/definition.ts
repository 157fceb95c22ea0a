import { Ajv, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { RE2JS } from 're2js'
import { ajvErrors } from '../validation.js'
import { checkLogic, evaluateLogic, truthy } from '../jsonlogic.js'
import { findAntipodalEdge, findElevation, validateGeometry, type Geometry } from '../geo/index.js'
import { validationError } from '../errors.js'
import { unstorableValue } from '../storable.js'
import { boundKeywords, budgeted, SchemaBudgetExceeded, withCosts } from './schema-cost.js'

const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv }

function linearRegExpFn (pattern: string): { test: (s: string) => boolean } {
  const re = RE2JS.compile(pattern)
  return { test: s => re.test(s) }
}
const linearRegExp = Object.assign(linearRegExpFn, { code: 'RE2JS' })

/** Bounds on a tenant's attribute schema: what one tenant may submit, so validating stays cheap. */
export const SCHEMA_LIMITS = { maxBytes: 64 * 1024, maxDepth: 32, maxPatternLength: 1000 }

function checkSchemaBounds (schema: unknown, path: string, depth: number): { field: string, reason: string } | null {
  if (depth > SCHEMA_LIMITS.maxDepth) return { field: path, reason: `nests deeper than ${SCHEMA_LIMITS.maxDepth} levels` }
  if (schema === null || typeof schema !== 'object') return null
  for (const [k, v] of Object.entries(schema)) {
    const p = Array.isArray(schema) ? `${path}[${k}]` : `${path}.${k}`
    if (k === 'pattern' && typeof v === 'string' && v.length > SCHEMA_LIMITS.maxPatternLength) return { field: p, reason: `is longer than ${SCHEMA_LIMITS.maxPatternLength} characters` }
    if (k === 'patternProperties' && v !== null && typeof v === 'object') {
      const long = Object.keys(v).find(re => re.length > SCHEMA_LIMITS.maxPatternLength)
      if (long !== undefined) return { field: p, reason: `holds a pattern longer than ${SCHEMA_LIMITS.maxPatternLength} characters` }
    }
    const f = checkSchemaBounds(v, p, depth + 1)
    if (f) return f
  }
  return null
}

/** The versioned part of an object type: what draft -> sandbox -> published moves. */
export interface TypeDefinition {
  name: string
  description: string | null
  attributeSchema: Record<string, unknown> | null
  /** makeValid: absent in definitions saved before it existed (false). */
  geometry: { required: boolean, types: string[], makeValid?: boolean }
  validationRules: Array<{ name: string, rule: unknown, message: string }>
  workflowId: string | null
  publicIdTemplate: string | null
}

export interface Fault { field: string, reason: string }

// Tenant schemas compile in their own instance: lax about unknown keywords and formats (tenants
// write `title`, `x-ui`...; they are ignored, silently), but schemas that fail to compile are
// refused when the type is saved. Hazard: an Ajv instance is shared state. With addUsedSchema
// off, a schema's `$id` is not registered, so two types (of any tenants) may use the same `$id`
// and a `$ref` never resolves against another tenant's schema; every compiled schema is removed
// from Ajv's cache again (see compile), so memory stays bounded by the validator cache below.
// Tenant regular expressions (`pattern`, `patternProperties`) run on RE2 semantics (re2js, pure
// JavaScript, linear time): `^(a+)+$` cannot backtrack. A pattern RE2 cannot express
// (backreferences, lookaround) fails to compile, so the type is refused with 400.
const tenantAjv = new Ajv({ allErrors: true, strict: false, validateSchema: true, addUsedSchema: false, logger: false, code: { regExp: linearRegExp } })
addFormats.default(tenantAjv)
// Linear uniqueItems and a budget of subschema applications (schema-cost.ts).
boundKeywords(tenantAjv)

function compile (schema: Record<string, unknown>): ValidateFunction {
  const counted = withCosts(schema) as Record<string, unknown>
  try {
    return tenantAjv.compile(counted)
  } finally {
    tenantAjv.removeSchema(counted)
  }
}

/** Faults listed per validation: allErrors finds one per failing item of a long list. */
const MAX_ATTRIBUTE_FAULTS = 100

/** Attribute faults, within the application budget their size allows (a fault when it runs out). */
function attributeFaults (validate: ValidateFunction, attributes: Record<string, unknown>): Fault[] {
  try {
    return budgeted(attributes, () => validate(attributes)) ? [] : ajvErrors(validate.errors?.slice(0, MAX_ATTRIBUTE_FAULTS), 'attributes')
  } catch (err) {
    if (!(err instanceof SchemaBudgetExceeded)) throw err
    return [{ field: 'attributes', reason: 'the object type\'s attributeSchema takes too many steps to check these attributes (its anyOf, allOf or oneOf branches over recursive definitions multiply); simplify the schema' }]
  }
}

/**
 * Compiles the JSON Schema meta-schema tenant schemas are checked against, once per process at
 * start: otherwise the first object written pays for it (a worker's first runs).
 */
export function warmValidators (): void {
  compile({ type: 'object' })
}

const TEMPLATE_TOKEN = /\{\{\s*([^}]*?)\s*\}\}/g
const KNOWN_TOKEN = /^(seq(:\d{1,2})?|year|month|day|type\.key|attributes\.[A-Za-z0-9_.-]+)$/

/** Checks a definition before it is saved; throws VALIDATION_ERROR naming the path. */
export function checkDefinition (def: TypeDefinition): void {
  const bad = unstorableValue(def, '')
  if (bad) throw validationError(bad.field, bad.reason)
  if (def.attributeSchema !== null) {
    if (def.attributeSchema.type !== 'object') throw validationError('attributeSchema.type', 'must be "object"')
    if (JSON.stringify(def.attributeSchema).length > SCHEMA_LIMITS.maxBytes) throw validationError('attributeSchema', `is larger than ${SCHEMA_LIMITS.maxBytes} bytes`)
    const bound = checkSchemaBounds(def.attributeSchema, 'attributeSchema', 0)
    if (bound) throw validationError(bound.field, bound.reason)
    try {
      compile(def.attributeSchema)
    } catch (err) {
      throw validationError('attributeSchema', `is not a valid JSON Schema: ${(err as Error).message}`)
    }
  }
  def.validationRules.forEach((r, i) => {
    const f = checkLogic(r.rule, `validationRules[${i}].rule`)
    if (f) throw validationError(f.path, f.reason)
  })
  const names = def.validationRules.map(r => r.name)
  const dup = names.find((n, i) => names.indexOf(n) !== i)
  if (dup !== undefined) throw validationError('validationRules', `rule name "${dup}" is used twice`)
  if (def.publicIdTemplate !== null) {
    for (const m of def.publicIdTemplate.matchAll(TEMPLATE_TOKEN)) {
      if (!KNOWN_TOKEN.test(m[1])) throw validationError('publicIdTemplate', `unknown token {{${m[1]}}}; use seq, seq:N, year, month, day, type.key or attributes.<name>`)
    }
  }
}

// Published versions never change, so their compiled validators are cached by (type, version).
const published = new Map<string, ValidateFunction>()
const MAX_CACHED = 2000

function validatorFor (def: TypeDefinition, cacheKey: string | null): ValidateFunction | null {
  if (def.attributeSchema === null) return null
  if (cacheKey !== null) {
    const hit = published.get(cacheKey)
    if (hit) return hit
  }
  const v = compile(def.attributeSchema)
  if (cacheKey !== null) {
    if (published.size >= MAX_CACHED) published.delete(published.keys().next().value as string)
    published.set(cacheKey, v)
  }
  return v
}

export interface Candidate {
  typeId: string
  attributes: Record<string, unknown>
  geometry: Geometry | null
  workflowState: string | null
}

/**
 * Every fault of a candidate object against a definition: attributes (ajv), geometry (valid
 * GeoJSON, an allowed type, present when required), then the JsonLogic validation rules.
 * `cacheKey` is set only for published (immutable) versions.
 */
export function validateCandidate (def: TypeDefinition, candidate: Candidate, cacheKey: string | null): Fault[] {
  const faults: Fault[] = []
  // Unstorable attributes are not handed to ajv: a recursive schema would recurse as deep as they do.
  const unstorable = unstorableValue(candidate.attributes, 'attributes')
  const validate = validatorFor(def, cacheKey)
  if (unstorable) faults.push(unstorable)
  else if (validate) faults.push(...attributeFaults(validate, candidate.attributes))
  if (candidate.geometry === null) {
    if (def.geometry.required) faults.push({ field: 'geometry', reason: 'is required by the object type' })
  } else {
    const g = validateGeometry(candidate.geometry, 'geometry') ?? findElevation(candidate.geometry, 'geometry') ?? findAntipodalEdge(candidate.geometry, 'geometry')
    if (g) faults.push({ field: g.path, reason: g.reason })
    else if (def.geometry.types.length > 0 && !def.geometry.types.includes(candidate.geometry.type)) {
      faults.push({ field: 'geometry.type', reason: `must be one of ${def.geometry.types.join(', ')}` })
    }
  }
  if (faults.length > 0) return faults
  for (const rule of def.validationRules) {
    const r = evaluateLogic(rule.rule, candidate)
    if (!r.ok) faults.push({ field: `validationRules.${rule.name}`, reason: `could not be evaluated: ${r.error}` })
    else if (!truthy(r.value)) faults.push({ field: `validationRules.${rule.name}`, reason: rule.message })
  }
  return faults
}
