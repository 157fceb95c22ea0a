import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { parse as parseQueryString } from 'node:querystring'
import { Ajv, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { flushAudit, newTenant, publishedType, startServer, type Client, type TestServer } from '../support/harness.js'

// A seeded, schema-driven negative sweep over every operation of the served /openapi/v1.json.
// For each operation it derives bad inputs from the documented schemas (path parameters, query
// parameters, the If-Match header, JSON bodies), keeps only those the document itself refuses (a
// test-side ajv over the documented schema is the oracle), sends them to a real server and checks
// the answer: a 4xx with the error body of docs/behaviour.md ("General": {"error":{"code","message","details"}},
// JSON, X-Request-Id), 400 where the document says the input is invalid (the validator and the
// document are built from the same schema objects, so a disagreement is a bug in one of them).
// Afterwards the tenant's rows must be exactly as before: a refused write wrote nothing.
//
// Reproduce a failure: the seed is fixed (BAD_INPUT_SEED overrides it, BAD_INPUT_MAX_CASES the cap
// per operation, for a deeper run); every case is labelled with the request it sent.

const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv }

const SEED = Number(process.env.BAD_INPUT_SEED ?? 20261124)
/** Cases sent per operation at most (sampled with the seeded PRNG when more are generated). */
const MAX_CASES_PER_OPERATION = Number(process.env.BAD_INPUT_MAX_CASES ?? 100)
/** Values sampled per documented parameter or body property from the generic palettes. */
const PER_FIELD = 3
/** A request that has not answered within this is a hang. */
const REQUEST_TIMEOUT_MS = 10_000
const DEPTH = 5000
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

// docs/behaviour.md "General": every error code and its status.
const STATUS_OF_CODE: Record<string, number> = {
  VALIDATION_ERROR: 400, BAD_REQUEST: 400, PRECONDITION_REQUIRED: 400, UNAUTHORIZED: 401, FORBIDDEN: 403,
  GUARD_FAILED: 403, LICENSE_LIMIT_EXCEEDED: 403, LICENSE_EXPIRED: 403, FEATURE_DISABLED: 403, NOT_FOUND: 404,
  VERSION_CONFLICT: 409, CONFLICT: 409, INVALID_TRANSITION: 409, PAYLOAD_TOO_LARGE: 413, RATE_LIMITED: 429,
  INTERNAL_ERROR: 500, NOT_READY: 503
}

// ---------------------------------------------------------------------------------------------
// The document's shapes (only what the sweep reads)

type JsonSchema = Record<string, any>
interface Parameter { name: string, in: 'path' | 'query' | 'header', required?: boolean, schema: JsonSchema, example?: unknown }
interface Operation {
  operationId: string
  security?: Array<Record<string, unknown>>
  parameters?: Parameter[]
  requestBody?: { required?: boolean, content: Record<string, { schema: JsonSchema, examples?: Record<string, { value: unknown }> }> }
}
interface Doc { paths: Record<string, Record<string, Operation>>, 'x-example-placeholders'?: Record<string, string> }

// ---------------------------------------------------------------------------------------------
// Seeded randomness

function mulberry32 (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

class Rng {
  private readonly next: () => number
  constructor (seed: number) { this.next = mulberry32(seed) }
  int (n: number): number { return Math.floor(this.next() * n) }
  shuffle<T> (xs: readonly T[]): T[] {
    const out = [...xs]
    for (let i = out.length - 1; i > 0; i--) { const j = this.int(i + 1); [out[i], out[j]] = [out[j], out[i]] }
    return out
  }
  sample<T> (xs: readonly T[], n: number): T[] { return this.shuffle(xs).slice(0, n) }
  uuid (): string {
    const hex = Array.from({ length: 32 }, () => this.int(16).toString(16))
    hex[12] = '4'
    hex[16] = '89ab'[this.int(4)]
    const h = hex.join('')
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  }
}

// ---------------------------------------------------------------------------------------------
// The oracle: the documented schemas, compiled by a test-side ajv

// strictNumbers: JSON's 1e400 is no number JavaScript (or Postgres) can hold.
const bodyAjv = new Ajv({ strict: false, strictNumbers: true, allErrors: false })
addFormats.default(bodyAjv)
// Query and path parameters arrive as text; OpenAPI validates each one on its own, coerced.
const paramAjv = new Ajv({ strict: false, strictNumbers: true, allErrors: false, coerceTypes: true })
addFormats.default(paramAjv)
const compiledBody = new WeakMap<object, ValidateFunction>()
const compiledParam = new WeakMap<object, ValidateFunction>()

function bodyValid (schema: JsonSchema, value: unknown): boolean {
  let v = compiledBody.get(schema)
  if (v === undefined) compiledBody.set(schema, v = bodyAjv.compile(schema))
  return v(value)
}

// ajv's coercion reads any text Number() reads ('0x10', ' 1', '1e400' as Infinity); a parameter's
// number is the decimal text of a finite number.
const DECIMAL = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

function paramValid (schema: JsonSchema, value: string | string[]): boolean {
  const numeric = schema.type === 'integer' || schema.type === 'number'
  if (numeric && typeof value === 'string' && !(DECIMAL.test(value) && Number.isFinite(Number(value)))) return false
  let v = compiledParam.get(schema)
  if (v === undefined) compiledParam.set(schema, v = paramAjv.compile({ type: 'object', properties: { v: schema } }))
  return v({ v: Array.isArray(value) ? [...value] : value })
}

/** What @koa/router hands the route for a path segment. */
function decodeSegment (raw: string): string {
  try { return decodeURIComponent(raw) } catch { return raw }
}

// ---------------------------------------------------------------------------------------------
// JSON text with values JSON.stringify cannot write (1e400, 2^70 exactly, 5,000 levels deep)

class Raw { constructor (readonly text: string) {} }

function toJson (value: unknown): string {
  const raws: string[] = []
  const text = JSON.stringify(value, (_k, v: unknown) => v instanceof Raw ? `\u0000raw${raws.push(v.text) - 1}\u0000` : v)
  return text.replace(/"\\u0000raw(\d+)\\u0000"/g, (_m, i: string) => raws[Number(i)])
}

const deepArray = () => new Raw('['.repeat(DEPTH) + ']'.repeat(DEPTH))
const deepObject = () => new Raw('{"a":'.repeat(DEPTH) + '1' + '}'.repeat(DEPTH))

/** Values of every JSON type and some extremes: the oracle keeps those a property's schema refuses. */
function palette (): unknown[] {
  return [
    12345, -1, 1.5, 0, new Raw('1e400'), new Raw('-1e400'), new Raw('1180591620717411303424'),
    'x', '', 'not-a-uuid', '\u0000', 'ü☃𝒳', 'x'.repeat(5000),
    true, false, null, [], [1, 'two'], {}, { zzUnknown: 1 }, deepArray(), deepObject()
  ]
}

/** Values aimed at one schema's own constraints (bounds, lengths, enum, pattern, format, items). */
function aimedAt (s: JsonSchema, base: unknown): unknown[] {
  const out: unknown[] = []
  if (Array.isArray(s.enum)) out.push('zz-not-in-enum', 0)
  if (typeof s.maxLength === 'number') out.push('x'.repeat(s.maxLength + 1))
  if (typeof s.minLength === 'number' && s.minLength > 0) out.push('x'.repeat(s.minLength - 1))
  if (typeof s.pattern === 'string') out.push(patternMiss(s.pattern))
  if (s.format === 'uuid') out.push('12345678-1234-1234-1234-1234567890123', 'not-a-uuid')
  if (s.format === 'date-time') out.push('2026-02-30T25:61:00Z', 'yesterday')
  if (typeof s.maximum === 'number') out.push(s.maximum + 1, new Raw('1e400'))
  if (typeof s.minimum === 'number') out.push(s.minimum - 1, new Raw('-1e400'))
  if (s.type === 'integer') out.push(1.5, new Raw('1e400'))
  if (typeof s.maxItems === 'number') out.push(Array.from({ length: s.maxItems + 1 }, (_x, i) => Array.isArray(base) && base.length > 0 ? base[0] : i))
  if (typeof s.minItems === 'number' && s.minItems > 0) out.push([])
  if (s.uniqueItems === true && Array.isArray(base) && base.length > 0) out.push([base[0], base[0]])
  if (typeof s.maxProperties === 'number') out.push(Object.fromEntries(Array.from({ length: s.maxProperties + 1 }, (_x, i) => [`k${i}`, 'v'])))
  if (typeof s.minProperties === 'number' && s.minProperties > 0) out.push({})
  return out.filter(v => v !== undefined)
}

function patternMiss (pattern: string): string | undefined {
  const re = new RegExp(pattern, 'u')
  return ['', ' ', '!!', 'A B', '-x', '\u0000', 'x'.repeat(300), 'ü'].find(c => !re.test(c))
}

// ---------------------------------------------------------------------------------------------
// Cases

interface Case {
  /** What the case varies, for the failure message: `query limit=abc`, `body attributes <- 12345`. */
  label: string
  method: string
  /** The request target exactly as sent (percent-encoding included). */
  target: string
  headers: Record<string, string>
  body?: string
  /** The statuses docs/behaviour.md allows for it; anything else fails the case. */
  expect: number[]
  /** For a body field made invalid: the path a VALIDATION_ERROR should name (validation.ts errorPath style). */
  field?: string
  /** For bodies that are not JSON at all: docs/behaviour.md names BAD_REQUEST. */
  code?: string
  /** Drawn from a palette by the seeded PRNG (the cap trims these first); else always generated. */
  sampled?: boolean
  /**
   * A refusal by the GraphQL layer itself (variables too deep) may come in GraphQL's own error
   * format: docs/behaviour.md "Platform": GraphQL errors carry extensions.code with the REST codes.
   */
  graphql?: boolean
}

interface Context {
  doc: Doc
  /** The app's declared routes. */
  routes: TestServer['routes']
  rng: Rng
  /** Placeholder sample -> the real value of this tenant. */
  bind: (value: unknown) => unknown
  token: string
  /** A system_admin of another tenant (audit.test.ts makes one the same way). */
  systemToken: string
  webhookToken: string
  maxBodyBytes: number
}

interface Op { method: string, path: string, op: Operation }

function operations (doc: Doc): Op[] {
  const out: Op[] = []
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const method of METHODS) if (ops[method] !== undefined) out.push({ method, path, op: ops[method] })
  }
  return out
}

/** The declared query schema refuses parameters it does not list (lib query schemas: additionalProperties false). */
function refusesUnknownQuery (o: Op, declaredRoutes: TestServer['routes']): boolean {
  const koaPath = o.path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1')
  const r = declaredRoutes.find(x => x.method === o.method && x.path === koaPath)
  return r?.query?.additionalProperties === false
}

/** The valid request each case varies one part of: real path ids, the example's headers and body. */
interface BaseRequest {
  segments: Record<string, string>
  required: Record<string, string>
  headers: Record<string, string>
  body: unknown
  bodySchema?: JsonSchema
}

function baseRequest (o: Op, c: Context): BaseRequest {
  const params = o.op.parameters ?? []
  const segments: Record<string, string> = {}
  for (const p of params.filter(p => p.in === 'path')) segments[p.name] = encodeURIComponent(String(c.bind(p.example)))
  const required: Record<string, string> = {}
  for (const p of params.filter(p => p.in === 'query' && p.required === true)) required[p.name] = String(c.bind(p.example))
  const headers: Record<string, string> = {}
  for (const p of params.filter(p => p.in === 'header' && p.example !== undefined)) headers[p.name] = String(c.bind(p.example))
  const bearer = (o.op.security ?? []).some(s => 'bearerAuth' in s)
  const webhook = (o.op.security ?? []).some(s => 'webhookToken' in s)
  if (bearer) headers.Authorization = `Bearer ${c.token}`
  if (webhook) headers.Authorization = `Bearer ${c.webhookToken}`
  const media = o.op.requestBody?.content['application/json']
  const body = media === undefined ? undefined : c.bind(media.examples?.contract?.value ?? {})
  return { segments, required, headers, body, bodySchema: media?.schema }
}

function target (o: Op, segments: Record<string, string>, query: string): string {
  const path = o.path.replace(/\{([A-Za-z0-9_]+)\}/g, (_m, name: string) => segments[name])
  return query === '' ? path : `${path}?${query}`
}

const encodeQuery = (q: Record<string, string>) => Object.entries(q).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')

function jsonRequest (base: BaseRequest): { headers: Record<string, string>, body?: string } {
  if (base.body === undefined) return { headers: base.headers }
  return { headers: { ...base.headers, 'Content-Type': 'application/json' }, body: toJson(base.body) }
}

// --- path parameters -------------------------------------------------------------------------

function pathCases (o: Op, c: Context, base: BaseRequest): Case[] {
  const out: Case[] = []
  const query = encodeQuery(base.required)
  for (const p of (o.op.parameters ?? []).filter(p => p.in === 'path')) {
    const real = base.segments[p.name]
    const numeric = p.schema.type === 'integer' || p.schema.type === 'number'
    const tile = o.path.startsWith('/v1/layers/tiles/') && ['z', 'x', 'y'].includes(p.name)
    const garbage = numeric
      ? ['-1', '19', '99999999999999999999', '1.5', '1e3', '0x10', 'abc', '%00', '%ZZ']
      : ['not-a-uuid', 'x'.repeat(3000), encodeURIComponent('ümlaut-☃-𝒳'), '%00', `${real}%00`, `abc%00def`, '%ZZ', '%', '%E0%A4%A', '%C0%AF',
          '..', '%2e%2e', '%2F', `${real}x`, `${real}%20`, encodeURIComponent("' OR '1'='1"), '-1', '99999999999999999999']
    const values = [...garbage, ...(numeric ? [] : [c.rng.uuid()])]
    for (const raw of values) {
      const invalid = !paramValid(p.schema, decodeSegment(raw))
      const req = jsonRequest(base)
      out.push({
        label: `path ${p.name}=${short(raw)}`,
        method: o.method,
        target: target(o, { ...base.segments, [p.name]: raw }, query),
        ...req,
        // Well-formed but naming nothing: 404 NOT_FOUND (docs/behaviour.md "General"). Documented as invalid:
        // 400, except that an id or slug that is not one names no resource either, and the service
        // answers that 404 NOT_FOUND too, as objects.test.ts, relations.test.ts and audit.test.ts
        // assert (ALLOWED: 404 for a malformed id). Tile coordinates: documented as invalid, 400
        // only; well-formed, 400 when out of range for the zoom (docs/behaviour.md "Layers and exports": z,
        // x, y out of range give 400; ALLOWED beside the 404), else 404 for the unknown layer.
        expect: tile ? (invalid ? [400] : [400, 404]) : (invalid ? [400, 404] : [404])
      })
    }
  }
  return out
}

// --- query parameters ------------------------------------------------------------------------

function queryCases (o: Op, c: Context, base: BaseRequest): Case[] {
  const out: Case[] = []
  const params = (o.op.parameters ?? []).filter(p => p.in === 'query')
  if (params.length === 0) return out
  const req = jsonRequest(base)
  const schemaOf = new Map(params.map(p => [p.name, p.schema]))
  const refuses = refusesUnknownQuery(o, c.routes)

  /** The oracle over the query text as the server parses it (node:querystring, like Koa). */
  const valid = (text: string): boolean => {
    const q = parseQueryString(text)
    for (const p of params) if (p.required === true && q[p.name] === undefined) return false
    for (const [k, v] of Object.entries(q)) {
      const s = schemaOf.get(k)
      if (s === undefined) { if (refuses) return false; continue }
      if (!paramValid(s, v as string | string[])) return false
    }
    return true
  }
  const add = (label: string, text: string, opts: { edge?: boolean, clamped?: boolean, sampled?: boolean, field?: string } = {}) => {
    const invalid = !valid(text)
    if (!invalid && opts.edge !== true) return
    const tenant = parseQueryString(text).tenant
    const otherChain = o.path.startsWith('/v1/audit/') && tenant !== undefined && tenant !== base.required.tenant
    out.push({
      label: `query ${label}`, method: o.method, target: target(o, base.segments, text), ...req, sampled: opts.sampled, field: opts.field,
      // A documented value GraphQL itself refuses (a query that does not parse, an operation
      // name naming none) is answered in GraphQL's format (Case.graphql).
      graphql: !invalid && o.path === '/v1/graphql',
      // Documented as invalid: 400. An edge the document allows (a huge tree size): whatever the
      // service answers but a 5xx (a size beyond the chain is a 400, lib/audit/tree.ts).
      // ALLOWED: an OGC limit above the documented maximum answers 200 with the maximum: OGC API -
      // Features Part 1 /req/core/fc-limit-response-1 forbids the error, the operation's description
      // says so, and clients (GDAL) read the schema's maximum as the server's page size.
      // ALLOWED 403 for a documented `tenant` on the audit routes: it names another tenant's chain,
      // which the owner may not read (docs/behaviour.md "Authentication and roles" and "Audit": only
      // system_admin reads `_system`, any other tenant is 403, recorded as permission.denied).
      expect: opts.clamped === true ? [200, 400] : invalid ? [400] : otherChain ? [403] : [200, 400, 404]
    })
  }
  const withRequired = (extra: string) => [encodeQuery(base.required), extra].filter(x => x !== '').join('&')

  for (const p of params) {
    const others = Object.fromEntries(Object.entries(base.required).filter(([k]) => k !== p.name))
    const qs = (raw: string) => [encodeQuery(others), `${encodeURIComponent(p.name)}=${raw}`].filter(x => x !== '').join('&')
    const generic = ['abc', '-1', '1.5', '1e400', '99999999999999999999', '', 'maybe', '%00', '%ZZ', encodeURIComponent('ü☃𝒳'), 'x'.repeat(3000), '0x10', '%20%201', '[]']
    const aimed = aimedAt(p.schema, undefined).filter((v): v is string | number => typeof v === 'string' || typeof v === 'number').map(v => encodeURIComponent(String(v)))
    const refused = generic.filter(raw => !valid(qs(raw)))
    const ogcLimit = o.path.startsWith('/v1/layers/ogc/') && p.name === 'limit'
    const clamped = (raw: string) => ogcLimit && Number(decodeSegment(raw)) > p.schema.maximum
    for (const raw of [...new Set(aimed)].filter(raw => !valid(qs(raw)))) add(`${p.name}=${short(raw)}`, qs(raw), { clamped: clamped(raw) })
    for (const raw of c.rng.sample(refused, PER_FIELD)) add(`${p.name}=${short(raw)}`, qs(raw), { clamped: clamped(raw), sampled: true })
    // Repeated: a valid value, then a refused one (the service reads the last; either reading refuses it).
    const good = p.example !== undefined ? String(c.bind(p.example)) : p.schema.default !== undefined ? String(p.schema.default) : undefined
    if (good !== undefined && refused.length > 0) {
      const bad = refused[c.rng.int(refused.length)]
      add(`${p.name} repeated (${short(good)}, ${short(bad)})`, `${qs(encodeURIComponent(good))}&${encodeURIComponent(p.name)}=${bad}`, { clamped: clamped(bad) })
    }
    if (p.required === true) add(`${p.name} missing`, encodeQuery(others))
    // Integers the document leaves unbounded: huge values must not reach the database as a 500.
    if (p.schema.type === 'integer' && p.schema.maximum === undefined) {
      for (const raw of ['99999999999999999999', '2147483648', '1e400']) add(`${p.name}=${raw} (unbounded)`, qs(raw), { edge: true })
    }
    // Text the document allows that no column can hold (NUL): a refusal names the parameter. And
    // text naming nothing (an operationName no operation has, a key no type has).
    if (p.schema.type === 'string') {
      add(`${p.name}=x%00 (documented, unstorable)`, qs('x%00'), { edge: true, field: p.name })
      add(`${p.name}=zz-names-nothing (documented)`, qs('zz-names-nothing'), { edge: true })
    }
  }
  if (refuses) add('zzUnknown=1 (not a documented parameter)', withRequired('zzUnknown=1'))
  return out
}

// --- If-Match --------------------------------------------------------------------------------

function headerCases (o: Op, c: Context, base: BaseRequest): Case[] {
  const p = (o.op.parameters ?? []).find(p => p.in === 'header' && p.name === 'If-Match')
  if (p === undefined) return []
  const req = jsonRequest(base)
  const query = encodeQuery(base.required)
  const malformed = ['abc', '"x"', 'W/"-1"', '-1', '99999999999999999999', '"1", "2"', '1.5', '""', 'W/', '"1']
  const out: Case[] = malformed.map(v => ({
    label: `header If-Match: ${v}`, method: o.method, target: target(o, base.segments, query),
    headers: { ...req.headers, 'If-Match': v }, body: req.body,
    // docs/behaviour.md "Objects": If-Match is 3, "3" or W/"3"; anything else is a bad request.
    expect: [400]
  }))
  // Well-formed and stale: 409 VERSION_CONFLICT (docs/behaviour.md "Objects", "Authentication and roles" for the policy).
  out.push({ label: 'header If-Match: "999" (stale)', method: o.method, target: target(o, base.segments, query), headers: { ...req.headers, 'If-Match': '"999"' }, body: req.body, expect: [409] })
  return out
}

// --- bodies ----------------------------------------------------------------------------------

type Key = string | number

/** validation.ts errorPath style: attributes.height, filters[0].operator. */
function fieldPath (keys: Key[]): string {
  let out = ''
  for (const k of keys) out += typeof k === 'number' ? `[${k}]` : (out === '' ? k : `.${k}`)
  return out === '' ? '(body)' : out
}

function setAt (root: unknown, keys: Key[], value: unknown | typeof REMOVE): unknown {
  const copy = structuredClone(root)
  let node: any = copy
  for (const k of keys.slice(0, -1)) node = node[k]
  const last = keys[keys.length - 1]
  if (value === REMOVE) { if (Array.isArray(node)) node.splice(last as number, 1); else delete node[last] } else node[last] = value
  return copy
}
const REMOVE = Symbol('remove')

interface Field { keys: Key[], schema: JsonSchema, value: unknown }

/**
 * Properties of `s` to vary, with their schema and the base value there: every documented one of
 * an object the base value holds (also those it leaves out), nested up to depth 3, through the
 * anyOf/oneOf branch the base value takes.
 */
function fieldsOf (s: JsonSchema, value: unknown, keys: Key[], depth: number, out: Field[]): void {
  if (depth > 3 || s === undefined) return
  const branch = [...(s.anyOf ?? []), ...(s.oneOf ?? [])].find((b: JsonSchema) => value !== undefined && bodyValid(b, value))
  if (branch !== undefined) fieldsOf(branch, value, keys, depth, out)
  if (s.properties !== undefined && isObject(value)) {
    for (const [k, ps] of Object.entries<JsonSchema>(s.properties)) {
      out.push({ keys: [...keys, k], schema: ps, value: value[k] })
      if (value[k] !== undefined) fieldsOf(ps, value[k], [...keys, k], depth + 1, out)
    }
  }
  if (isObject(s.additionalProperties) && isObject(value)) {
    for (const k of Object.keys(value)) {
      out.push({ keys: [...keys, k], schema: s.additionalProperties, value: value[k] })
      fieldsOf(s.additionalProperties, value[k], [...keys, k], depth + 1, out)
    }
  }
  if (isObject(s.items) && Array.isArray(value) && value.length > 0) {
    out.push({ keys: [...keys, 0], schema: s.items, value: value[0] })
    fieldsOf(s.items, value[0], [...keys, 0], depth + 1, out)
  }
}

const isObject = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * Operations that write nothing whatever their body: a 2xx to an extreme but documented value is
 * harmless there (object-type validate is a dry run, docs/behaviour.md "Object types and the schema registry"; the GraphQL example is
 * a query). Every other operation with a body writes (a query run counts against query_count).
 */
const DRY_RUNS = new Set(['validateAgainstObjectType', 'graphql'])

function bodyCases (o: Op, c: Context, base: BaseRequest): Case[] {
  const schema = base.bodySchema
  if (schema === undefined) return []
  assert.ok(bodyValid(schema, base.body), `${label(o)}: the documented example body does not validate against the documented schema`)
  const out: Case[] = []
  const url = target(o, base.segments, encodeQuery(base.required))
  const dry = DRY_RUNS.has(o.op.operationId)
  const send = (lbl: string, text: string, extra: Partial<Case> = {}, headers: Record<string, string> = { 'Content-Type': 'application/json' }) => {
    const tooLarge = Buffer.byteLength(text) > c.maxBodyBytes
    out.push({
      label: `body ${lbl}`, method: o.method, target: url, headers: { ...base.headers, ...headers }, body: text,
      // docs/behaviour.md "General": a body over MAX_BODY_BYTES is 413 PAYLOAD_TOO_LARGE, whatever it holds.
      expect: [400], ...extra, ...(tooLarge ? { expect: [413], field: undefined, code: 'PAYLOAD_TOO_LARGE' } : {})
    })
  }
  /** A JSON value for the whole body: sent only when the document refuses it. */
  const sendValue = (lbl: string, value: unknown, field?: string, sampled?: boolean): boolean => {
    const text = toJson(value)
    if (bodyValid(schema, JSON.parse(text))) return false
    send(lbl, text, { field, sampled })
    return true
  }
  /**
   * A value the document allows that is extreme (5,000 levels deep; an integer it leaves
   * unbounded): never a 5xx. Where the operation writes, 400: the service stores no JSON nested
   * deeper than 64 levels (lib/storable.ts MAX_JSON_DEPTH, the same bound for GraphQL variables).
   * A dry run may also answer it (200).
   */
  const sendEdge = (lbl: string, value: unknown): void => {
    const text = toJson(value)
    if (!bodyValid(schema, JSON.parse(text))) return
    out.push({
      label: `body ${lbl} (documented)`, method: o.method, target: url, headers: { ...base.headers, 'Content-Type': 'application/json' }, body: text,
      expect: dry ? [200, 400] : [400], graphql: o.path === '/v1/graphql'
    })
  }

  // Not JSON at all (docs/behaviour.md "General": 400 BAD_REQUEST), and JSON under another media type.
  for (const raw of ['{"typeId": ', '{typeId: 1}', "{'a': 1}", 'NaN', '{"a":1}{"b":2}', '\u0000', '[1,]', 'nul', '{"a":"\\x"}']) {
    send(`not JSON: ${short(raw)}`, raw, { code: 'BAD_REQUEST' })
  }
  send('valid JSON as text/plain', toJson(base.body), { code: 'BAD_REQUEST' }, { 'Content-Type': 'text/plain' })
  if (o.op.requestBody?.required === true) send('missing', '')
  send('over MAX_BODY_BYTES', toJson({ zzPadding: 'x'.repeat(c.maxBodyBytes) }))
  // The wrong top type, deep nesting, null.
  for (const v of [null, [], [base.body], 'a string', 42, true, deepArray()]) sendValue(`top-level ${short(toJson(v))}`, v)
  if (isObject(base.body)) {
    for (const k of (schema.required ?? []) as string[]) sendValue(`without required ${k}`, setAt(base.body, [k], REMOVE), k)
    if (schema.additionalProperties === false) {
      sendValue('unknown property zzUnknown', { ...base.body, zzUnknown: 1 }, 'zzUnknown')
      sendValue('unknown property holding a deep object', { ...base.body, zzUnknown: deepObject() }, 'zzUnknown')
    } else if (schema.properties === undefined) {
      sendEdge('zzDeep holding a deep object', { ...base.body, zzDeep: deepObject() })
    }
  }
  // Each documented property (nested ones where the example has them): values its schema refuses,
  // those aimed at its constraints always, a few of the palette drawn by the PRNG.
  const fields: Field[] = []
  fieldsOf(schema, base.body, [], 1, fields)
  for (const f of fields) {
    const path = fieldPath(f.keys)
    for (const v of aimedAt(f.schema, f.value)) sendValue(`${path} <- ${short(toJson(v))}`, setAt(base.body, f.keys, v), path)
    let drawn = 0
    for (const v of c.rng.shuffle(palette())) {
      if (drawn === PER_FIELD) break
      if (sendValue(`${path} <- ${short(toJson(v))}`, setAt(base.body, f.keys, v), path, true)) drawn++
    }
    if (isObject(f.value) && f.schema.additionalProperties === false) {
      sendValue(`${path}.zzUnknown added`, setAt(base.body, [...f.keys, 'zzUnknown'], 1), fieldPath([...f.keys, 'zzUnknown']))
    }
    if (isObject(f.value)) {
      for (const k of (f.schema.required ?? []) as string[]) sendValue(`${path} without required ${k}`, setAt(base.body, [...f.keys, k], REMOVE), fieldPath([...f.keys, k]))
    }
    // Free-form values the document allows at any depth (attributes, metadata, match.value, variables).
    const deep = [deepObject(), deepArray()].find(v => bodyValid(schema, JSON.parse(toJson(setAt(base.body, f.keys, v)))))
    if (deep !== undefined) sendEdge(`${path} <- ${short(toJson(deep))}`, setAt(base.body, f.keys, deep))
    if (dry && f.schema.type === 'string' && f.schema.enum === undefined) sendEdge(`${path} <- "zz-names-nothing"`, setAt(base.body, f.keys, 'zz-names-nothing'))
    if (dry && (f.schema.type === 'integer' || f.schema.type === 'number') && f.schema.maximum === undefined) {
      for (const v of [new Raw('1180591620717411303424'), 2147483648]) sendEdge(`${path} <- ${short(toJson(v))} (unbounded)`, setAt(base.body, f.keys, v))
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Sending

interface Answer { status: number, headers: http.IncomingHttpHeaders, text: string }

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 })

/** One request through node:http, so the target is sent exactly as written; rejects after REQUEST_TIMEOUT_MS. */
function send (base: string, c: Case): Promise<Answer> {
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...c.headers }
    if (c.body !== undefined) headers['Content-Length'] = Buffer.byteLength(c.body)
    const req = http.request({ host: u.hostname, port: u.port, path: c.target, method: c.method.toUpperCase(), headers, agent }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', d => { text += d })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
      res.on('error', reject)
    })
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms (a hang)`)))
    // The server may answer 413 and close before the whole body is sent.
    req.on('error', err => (err as NodeJS.ErrnoException).code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err))
    if (c.body !== undefined) req.write(c.body)
    req.end()
  })
}

/** Everything wrong with the answer to one case ([] when it is right). */
function faults (c: Case, a: Answer): string[] {
  const out: string[] = []
  if (!c.expect.includes(a.status)) out.push(`status ${a.status}, expected ${c.expect.join(' or ')}`)
  if (a.status >= 200 && a.status < 300) return out
  if (!/^application\/json\b/.test(String(a.headers['content-type'] ?? ''))) out.push(`content-type ${a.headers['content-type']}`)
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(String(a.headers['x-request-id'] ?? ''))) out.push('no X-Request-Id')
  let body: any
  try { body = JSON.parse(a.text) } catch { out.push('body is not JSON'); return out }
  if (c.graphql === true && isObject(body) && Array.isArray(body.errors)) {
    // ALLOWED (Case.graphql): GraphQL's format, {errors: [{message, extensions: {code, status, details}}]}.
    const x = body.errors[0]?.extensions
    if (!isObject(x) || STATUS_OF_CODE[x.code] !== a.status || x.status !== a.status) out.push(`GraphQL error without a documented code for ${a.status}`)
    return out
  }
  if (!isObject(body) || Object.keys(body).join() !== 'error' || !isObject(body.error)) { out.push('body is not {"error":{...}}'); return out }
  const e = body.error
  if (Object.keys(e).sort().join() !== 'code,details,message') out.push(`error keys ${Object.keys(e).sort().join(',')}`)
  if (STATUS_OF_CODE[e.code] !== a.status) out.push(`code ${e.code} with status ${a.status}`)
  if (typeof e.message !== 'string' || e.message === '') out.push('no message')
  if (!isObject(e.details)) out.push('details is not an object')
  if (c.code !== undefined && e.code !== c.code) out.push(`code ${e.code}, expected ${c.code}`)
  if (e.code === 'VALIDATION_ERROR' && isObject(e.details)) {
    // docs/behaviour.md "General": VALIDATION_ERROR details {field, reason}.
    if (typeof e.details.field !== 'string' || typeof e.details.reason !== 'string') out.push('VALIDATION_ERROR without details.field and details.reason')
    else if (c.field !== undefined && a.status === 400) {
      const named = [e.details.field, ...(Array.isArray(e.details.errors) ? e.details.errors.map((x: { field?: string }) => x.field) : [])]
      if (!named.some(f => typeof f === 'string' && related(f, c.field!))) out.push(`names ${named.join(', ')}, not ${c.field}`)
    }
  }
  return out
}

/** `a` and `b` are the same path or one lies under the other. */
function related (a: string, b: string): boolean {
  const under = (x: string, y: string) => x === y || x.startsWith(`${y}.`) || x.startsWith(`${y}[`) || y === '(body)'
  return under(a, b) || under(b, a)
}

function short (s: string): string {
  const t = s.replace(/\u0000/g, '\\0')
  return t.length > 40 ? `${t.slice(0, 24)}...(${t.length} chars)` : t
}

const label = (o: Op) => `${o.method.toUpperCase()} ${o.path} (${o.op.operationId})`

/** At most MAX_CASES_PER_OPERATION: the generated cases first, then those drawn from palettes (seeded choice where there are more). */
function capped (all: Case[], rng: Rng): Case[] {
  const fixed = all.filter(c => c.sampled !== true)
  if (fixed.length >= MAX_CASES_PER_OPERATION) return rng.sample(fixed, MAX_CASES_PER_OPERATION)
  return [...fixed, ...rng.sample(all.filter(c => c.sampled === true), MAX_CASES_PER_OPERATION - fixed.length)]
}

// ---------------------------------------------------------------------------------------------
// The tenant's rows: every table with a tenant_id column

// Refusals themselves are recorded (docs/behaviour.md "Audit": auth.failed, permission.denied; lib/audit/README.md),
// and the chain's bookkeeping (head, Merkle nodes) moves with them: those are not the writes refused.
const RECORDED_REFUSALS = ['auth.failed', 'permission.denied']
const CHAIN_BOOKKEEPING = new Set(['audit_heads', 'audit_tree_nodes'])

async function tenantRows (s: TestServer, tenant: string): Promise<Record<string, string>> {
  const tables = (await s.db.raw(`SELECT table_name AS t FROM information_schema.columns
    WHERE column_name = 'tenant_id' AND table_schema = current_schema() ORDER BY 1`)).rows.map((r: { t: string }) => r.t)
  const out: Record<string, string> = {}
  for (const t of tables) {
    if (CHAIN_BOOKKEEPING.has(t)) continue
    const extra = t === 'audit_events' ? ` AND type NOT IN (${RECORDED_REFUSALS.map(() => '?').join(', ')})` : ''
    const r = await s.db.raw(`SELECT count(*)::int AS n, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h
      FROM "${t}" x WHERE tenant_id = ?${extra}`, [tenant, ...(extra === '' ? [] : RECORDED_REFUSALS)])
    out[t] = `${r.rows[0].n} rows, md5 ${r.rows[0].h}`
  }
  return out
}

// ---------------------------------------------------------------------------------------------

describe('bad input: every documented operation refuses inputs its schemas refuse, with the error body', () => {
  let s: TestServer
  let owner: Client
  let tenant: string
  let doc: Doc
  let ctx: Context
  let rowsBefore: Record<string, string>

  before(async () => {
    s = await startServer()
    tenant = newTenant('bad')
    owner = s.as(tenant, ['owner'])
    const rng = new Rng(SEED)
    const ok = async (res: Promise<{ status: number, text: string, body: any }>, what: string) => {
      const r = await res
      assert.ok(r.status >= 200 && r.status < 300, `${what}: ${r.status} ${r.text}`)
      return r.body
    }
    // Real resources, so path ids are real where a case varies something else. Slugs are the examples' own.
    const workflow = await ok(owner.post('/v1/workflows', {
      key: 'review', name: 'Review', initialState: 'draft',
      states: [{ name: 'draft' }, { name: 'review' }, { name: 'approved', final: true }],
      transitions: [{ from: ['draft'], targetState: 'review' }, { from: ['review'], targetState: 'approved' }]
    }), 'workflow')
    const typeId = await publishedType(owner, {
      key: 'pole', workflowId: workflow.id,
      attributeSchema: { type: 'object', properties: { material: { type: 'string' }, height: { type: 'number' } } }
    })
    const objectBody = { typeId, attributes: { material: 'wood', height: 9 }, geometry: { type: 'Point', coordinates: [13.4, 52.52] } }
    const object = await ok(owner.post('/v1/objects', objectBody), 'object')
    const other = await ok(owner.post('/v1/objects', objectBody), 'other object')
    const relation = await ok(owner.post('/v1/relations', { fromObjectId: object.id, toObjectId: other.id, relationType: 'feeds' }), 'relation')
    const rule = await ok(owner.post('/v1/rules', { key: 'tall-enough', name: 'Tall enough', kind: 'jsonlogic', definition: { rule: { '>=': [{ var: 'object.attributes.height' }, 3] } } }), 'rule')
    const automationRule = await ok(owner.post('/v1/automation/rules', {
      name: 'Record inspections', trigger: { type: 'webhook', slug: 'inspections' },
      effect: { type: 'object.update', objectId: '{{payload.objectId}}', attributes: { inspected: true } }
    }), 'automation rule')
    // Active, so the ingress refusals below are refusals of a live rule's slug.
    await ok(owner.post(`/v1/automation/rules/${automationRule.id}/publish`, { to: 'active' }), 'publish automation rule')
    const layer = await ok(owner.post('/v1/layers/definitions', { name: 'Poles', slug: 'poles', definition: { filters: { typeId }, fields: ['publicId', 'attributes.height'] } }), 'layer')
    const events = await ok(owner.get('/v1/audit/events?limit=1'), 'audit events')

    doc = (await s.request('GET', '/openapi/v1.json')).body
    const real: Record<string, string> = {
      typeId, spareTypeId: typeId, objectId: object.id, otherObjectId: other.id, spareObjectId: object.id,
      workflowId: workflow.id, ruleId: rule.id, relationId: relation.id, automationRuleId: automationRule.id,
      spareAutomationRuleId: automationRule.id, layerId: layer.id, auditEventId: events.items[0].id,
      // No run exists (no worker here): run paths get a well-formed id that names nothing.
      runId: rng.uuid(), webhookToken: automationRule.webhookToken, licenseKey: 'not-a-license-key'
    }
    const samples = Object.entries(doc['x-example-placeholders'] ?? {})
    const bind = (value: unknown): unknown => {
      if (value === undefined) return undefined
      let text = JSON.stringify(value)
      for (const [name, sample] of samples) {
        if (!text.includes(sample)) continue
        assert.ok(real[name] !== undefined, `the examples use {${name}}, which this sweep has no value for`)
        text = text.split(sample).join(real[name])
      }
      return JSON.parse(text)
    }
    ctx = { doc, routes: s.routes, rng, bind, token: owner.token, systemToken: s.as(newTenant('ops'), ['system_admin']).token, webhookToken: automationRule.webhookToken, maxBodyBytes: s.config.maxBodyBytes }
    await flushAudit(s.db, tenant)
    rowsBefore = await tenantRows(s, tenant)
  })
  after(async () => {
    agent.destroy()
    await s?.close()
  })

  it('answers every bad input with a 4xx and the error body, never a 5xx or a hang', async t => {
    let covered = 0
    let sent = 0
    const skipped: string[] = []
    const sweeps: Array<{ name: string, cases: Case[] }> = []
    for (const o of operations(doc)) {
      const base = baseRequest(o, ctx)
      const all = [...pathCases(o, ctx, base), ...queryCases(o, ctx, base), ...headerCases(o, ctx, base), ...bodyCases(o, ctx, base)]
      if (all.length === 0) {
        // Nothing documented to vary: no path or query parameter, no header, no body (health,
        // metrics, the documents, the map page, auth/me, license and policy reads, the flush).
        skipped.push(o.op.operationId)
        continue
      }
      covered++
      sweeps.push({ name: label(o), cases: capped(all, ctx.rng) })
      // The audit routes read the `_system` chain for system_admin (docs/behaviour.md "Authentication and
      // roles"): their parameters once more on that path, with a system_admin token.
      if ((o.op.parameters ?? []).some(p => p.in === 'query' && p.name === 'tenant')) {
        const system = { ...base, required: { ...base.required, tenant: '_system' }, headers: { ...base.headers, Authorization: `Bearer ${ctx.systemToken}` } }
        sweeps.push({ name: `${label(o)} as system_admin on _system`, cases: capped(queryCases(o, ctx, system), ctx.rng) })
      }
    }
    for (const { name, cases } of sweeps) {
      sent += cases.length
      await t.test(name, async () => {
        const failed: string[] = []
        for (const c of cases) {
          let a: Answer
          try { a = await send(s.base, c) } catch (err) { failed.push(`${c.label}: ${(err as Error).message}`); continue }
          const f = faults(c, a)
          if (f.length > 0) failed.push(`${c.label} [${c.method.toUpperCase()} ${short(c.target)}]: ${f.join('; ')} :: ${a.text.slice(0, 300)}`)
        }
        assert.deepEqual(failed, [], `${failed.length} of ${cases.length} cases answered wrongly:\n${failed.join('\n')}`)
      })
    }
    t.diagnostic(`bad-input sweep (seed ${SEED}): ${covered} operations covered (${sweeps.length - covered} again as system_admin), ` +
      `${sent} cases sent; ${skipped.length} without inputs to vary: ${skipped.join(', ')}`)
  })

  it('the refused requests changed none of the tenant\'s rows', async () => {
    assert.deepEqual(await tenantRows(s, tenant), rowsBefore)
  })
})
