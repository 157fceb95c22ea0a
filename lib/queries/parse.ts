import { validationError } from '../errors.js'
import { parse } from '../validation.js'
import * as schema from './schema.js'
import { requireText, resolveValueField } from './fields.js'
import { parseFilters } from './parse-filter.js'
import type { AggregateFunction, Aggregation, FilterNode, GraphSpec, Query, Sort, ValueField } from './types.js'

// Request -> typed Query. The body's outer shape is checked by ajv (RunQueryBody); the filter
// tree, field names and their combinations here. All faults are 400 VALIDATION_ERROR with the path.

interface RunQueryInput {
  filters?: unknown[]
  sorts?: Array<{ field: string, order?: 'asc' | 'desc' }>
  limit?: number
  offset?: number
  graph?: { objectIds?: string[], maxDepth?: number, relationTypes?: string[], relationDirection?: GraphSpec['direction'] }
  aggregations?: Array<{ field: string, function: AggregateFunction }>
  asOf?: string
}

const DEFAULT_LIMIT = 100

export function parseRunQuery (body: unknown): Query {
  const input = parse<RunQueryInput>(schema.RunQueryBody, body ?? {})
  const aggregations = (input.aggregations ?? []).map((a, i) => parseAggregation(a.field, a.function, `aggregations[${i}]`))
  const graph = input.graph === undefined ? null : parseGraph(input.graph)
  if (graph !== null && aggregations.length > 0) throw validationError('aggregations', 'cannot be combined with graph')
  return {
    filter: parseFilters(input.filters),
    sorts: parseSorts(input.sorts),
    limit: input.limit ?? DEFAULT_LIMIT,
    offset: input.offset ?? 0,
    aggregations,
    graph,
    ...(input.asOf === undefined ? {} : { asOf: input.asOf })
  }
}

function parseSorts (sorts: RunQueryInput['sorts']): Sort[] {
  if (sorts === undefined || sorts.length === 0) return [{ field: resolveValueField('createdAt', 'sorts'), order: 'asc' }]
  return sorts.map((s, i) => ({ field: resolveValueField(s.field, `sorts[${i}].field`), order: s.order ?? 'asc' }))
}

const MIN_MAX_COLUMNS = ['createdAt', 'updatedAt', 'publicId', 'workflowState']

function parseAggregation (rawField: string, fn: AggregateFunction, at: string): Aggregation {
  if (rawField === '*') {
    if (fn !== 'count') throw validationError(`${at}.field`, `* is for count only; ${fn} needs an attribute`)
    return { label: '*', field: null, fn }
  }
  const field: ValueField = resolveValueField(rawField, `${at}.field`)
  if (field.kind === 'column') {
    if (fn === 'sum' || fn === 'avg') throw validationError(`${at}.field`, `${fn} needs a numeric attribute (attributes.<name>)`)
    if (fn !== 'count' && !MIN_MAX_COLUMNS.includes(field.name)) throw validationError(`${at}.field`, `${fn} takes attributes.<name>, ${MIN_MAX_COLUMNS.join(', ')}`)
  }
  return { label: rawField, field, fn }
}

function parseGraph (g: NonNullable<RunQueryInput['graph']>): GraphSpec {
  const relationTypes = g.relationTypes?.map((t, i) => requireText(t, `graph.relationTypes[${i}]`)) ?? null
  return {
    objectIds: g.objectIds === undefined ? null : [...new Set(g.objectIds.map(id => id.toLowerCase()))],
    maxDepth: g.maxDepth ?? 1,
    relationTypes,
    direction: g.relationDirection ?? 'all'
  }
}

export interface ListParams {
  typeId?: string
  status?: string
  limit: number
  offset: number
  sortBy: string
  sortOrder: 'asc' | 'desc'
  asOf?: string
}

/** GET /v1/queries/objects -> the same typed Query the run endpoint uses. */
export function fromListParams (p: ListParams): Query {
  const filters: unknown[] = []
  if (p.typeId !== undefined) filters.push({ field: 'typeId', operator: 'eq', value: p.typeId })
  if (p.status !== undefined) filters.push({ field: 'workflowState', operator: 'eq', value: requireText(p.status, 'status') })
  const filter: FilterNode | null = parseFilters(filters)
  return {
    filter,
    sorts: [{ field: resolveValueField(p.sortBy, 'sortBy'), order: p.sortOrder }],
    limit: p.limit,
    offset: p.offset,
    aggregations: [],
    graph: null,
    ...(p.asOf === undefined ? {} : { asOf: p.asOf })
  }
}
