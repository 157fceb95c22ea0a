import { ErrorBody } from '../../lib/schemas.js'
import type { RouteSpec } from '../http/route.js'
import { exampleExtension, placeholderSample, renderPlaceholders } from './examples.js'

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'VALIDATION_ERROR, BAD_REQUEST or PRECONDITION_REQUIRED',
  401: 'UNAUTHORIZED: missing, invalid or expired token',
  403: 'FORBIDDEN, GUARD_FAILED, LICENSE_LIMIT_EXCEEDED, LICENSE_EXPIRED or FEATURE_DISABLED',
  404: 'NOT_FOUND',
  409: 'VERSION_CONFLICT, CONFLICT or INVALID_TRANSITION',
  413: 'PAYLOAD_TOO_LARGE',
  429: 'RATE_LIMITED; see Retry-After',
  500: 'INTERNAL_ERROR',
  503: 'NOT_READY: the database did not answer (down, or a statement over DB_STATEMENT_TIMEOUT_MS)'
}

/**
 * A description per tag (the linter requires one). A route module with a new tag adds it here;
 * the lint test (test/api/openapi-lint.test.ts) names any tag that lacks one.
 */
export const TAG_DESCRIPTIONS: Record<string, string> = {
  audit: 'The tamper-evident audit chain: list events, verify an event and the chain',
  automation: 'Automation rules (trigger, match, condition, effect), their runs and the webhook ingress',
  changes: 'The change feed: the tenant\'s object changes in commit order after a cursor, as pages or a live Server-Sent Events stream',
  graphql: 'The GraphQL endpoint and its schema: the same services, permissions and limits as REST',
  layers: 'Layer definitions and spatial exports: GeoJSON, NDJSON, vector tiles, OGC API Features',
  license: 'License status, installation and usage',
  objects: 'Spatial objects: create, read (also as of a past time), update with optimistic locking, delete, history',
  'object-types': 'Object types: attribute schema, geometry rules, validation rules, workflow; draft -> sandbox -> published',
  ogc: 'OGC API - Features (Part 1: Core, GeoJSON, OpenAPI 3.0) over the tenant\'s layers, one collection per layer, for QGIS, GDAL and other OGC clients',
  outbox: 'Domain events queued in the outbox',
  permissions: 'The tenant permission policy',
  platform: 'Health, metrics, the contract documents and the caller\'s identity',
  queries: 'The object query service: simple filters and the JSON query DSL with spatial filters, graph expansion and aggregations',
  relations: 'Directed, typed links between objects, with metadata; soft delete and restore',
  rules: 'Reusable guard rules (JsonLogic or spatial) with the draft -> sandbox -> published model',
  'schema-registry': 'Every version of an object type, workflow or rule with its status and definition',
  workflows: 'Workflow state machines, object transitions and the explanation of available transitions'
}

const SECURITY_SCHEMES: Record<string, { scheme: object, usedBy: RouteSpec['auth'] }> = {
  bearerAuth: { scheme: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'HS256 JWT with sub, tenant, roles, scope' }, usedBy: 'bearer' },
  webhookToken: { scheme: { type: 'http', scheme: 'bearer', description: "An automation rule's webhook token" }, usedBy: 'webhook' },
  metricsToken: { scheme: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when configured' }, usedBy: 'metrics' }
}

function oasPath (koaPath: string): string {
  return koaPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
}

/** `example` of a parameter, when the route's example gives it a value. */
function paramExample (value: unknown, used: Set<string>): object {
  return value === undefined ? {} : { example: renderPlaceholders(value, used) }
}

function operation (r: RouteSpec, used: Set<string>): object {
  const parameters: object[] = []
  const ex = r.example
  for (const name of [...r.path.matchAll(/:([A-Za-z0-9_]+)/g)].map(m => m[1])) {
    const p = r.pathParams?.[name]
    parameters.push({ name, in: 'path', required: true, description: p?.description ?? name, schema: p?.schema ?? { type: 'string' }, ...paramExample(ex?.params?.[name], used) })
  }
  for (const [name, schema] of Object.entries(r.query?.properties ?? {})) {
    const s = schema as { description?: string }
    parameters.push({ name, in: 'query', required: r.query?.required?.includes(name) ?? false, ...(s.description ? { description: s.description } : {}), schema, ...paramExample(ex?.query?.[name], used) })
  }
  for (const [name, h] of Object.entries(r.headers ?? {})) {
    parameters.push({ name, in: 'header', required: h.required ?? false, description: h.description, schema: h.schema, ...paramExample(ex?.headers?.[name], used) })
  }
  const responses: Record<string, object> = {}
  for (const [status, res] of Object.entries(r.responses)) {
    responses[status] = {
      description: res.description,
      ...(res.headers ? { headers: res.headers } : {}),
      ...(res.schema || res.contentType
        ? { content: { [res.contentType ?? 'application/json']: { schema: res.schema ?? { type: 'string' } }, ...Object.fromEntries(Object.entries(res.alternatives ?? {}).map(([type, schema]) => [type, { schema }])) } }
        : {})
    }
  }
  const errors = new Set<number>([...(r.errors ?? []), 500])
  if (r.auth === 'bearer' || r.auth === 'webhook') { errors.add(401); errors.add(503) }
  if (r.auth === 'bearer' || r.feature !== undefined) errors.add(403)
  if (r.unlimited !== true) errors.add(429)
  if (r.body) { errors.add(400); errors.add(413) }
  for (const code of errors) {
    responses[String(code)] ??= { description: ERROR_DESCRIPTIONS[code] ?? 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }
  }
  const security = r.auth === 'bearer' ? [{ bearerAuth: [] }] : r.auth === 'webhook' ? [{ webhookToken: [] }] : r.auth === 'metrics' ? [{}, { metricsToken: [] }] : []
  return {
    operationId: r.operationId,
    summary: r.summary,
    ...(r.description ? { description: r.description } : {}),
    tags: [r.tag],
    // The license module switch this operation belongs to: 403 FEATURE_DISABLED when it is off.
    ...(r.feature !== undefined ? { 'x-license-feature': r.feature } : {}),
    security,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(r.body ? { requestBody: { required: r.bodyRequired ?? true, content: { 'application/json': { schema: r.body, ...bodyExamples(r, used) } } } } : {}),
    responses,
    // Replayed by test/api/contract.test.ts: the status it answers, what it saves for later examples.
    ...(ex ? { 'x-example': exampleExtension(ex, used) } : {})
  }
}

function bodyExamples (r: RouteSpec, used: Set<string>): object {
  const ex = r.example
  if (ex?.body === undefined) return {}
  return { examples: { contract: { summary: ex.summary, value: renderPlaceholders(ex.body, used) } } }
}

/** OpenAPI 3.0 from the declared routes; schemas are the request validators themselves. */
export function buildOpenApi (declaredRoutes: RouteSpec[], release: string): object {
  const paths: Record<string, Record<string, object>> = {}
  const used = new Set<string>()
  for (const r of declaredRoutes) {
    const p = oasPath(r.path)
    paths[p] ??= {}
    paths[p][r.method] = operation(r, used)
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'Spatial Object, Workflow and Automation Service',
      version: release,
      description: 'REST contract v1. Errors use the body {"error":{"code","message","details"}}. Lists use the pagination envelope. Timestamps are ISO 8601 UTC with milliseconds. ' +
        'Request bodies are JSON, sent as application/json or any other +json media type (e.g. application/merge-patch+json for a PATCH), all read alike; another Content-Type gives 400 BAD_REQUEST.'
    },
    servers: [{ url: '/' }],
    tags: [...new Set(declaredRoutes.map(r => r.tag))].sort().map(name => ({ name, ...(TAG_DESCRIPTIONS[name] ? { description: TAG_DESCRIPTIONS[name] } : {}) })),
    paths,
    // How examples refer to each other: each placeholder's sample in the examples (x-example.saves
    // names the operation whose answer provides it; the rest are supplied by the caller).
    'x-example-placeholders': Object.fromEntries([...used].sort().map(n => [n, placeholderSample(n)])),
    components: {
      // Only the schemes some route uses (an unused component is a lint error).
      securitySchemes: Object.fromEntries(Object.entries(SECURITY_SCHEMES)
        .filter(([, s]) => declaredRoutes.some(r => r.auth === s.usedBy)).map(([name, s]) => [name, s.scheme])),
      schemas: { Error: ErrorBody }
    }
  }
}
