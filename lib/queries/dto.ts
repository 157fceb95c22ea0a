import type * as objects from '../objects/index.js'
import type { Aggregation } from './types.js'

/** A result item: the object as GET /v1/objects lists it (objectId equals id); built in SQL. */
export type QueryItem = objects.ObjectDto & { objectId: string }

/**
 * Aggregate values from the database: numeric sums and averages arrive as text (exact
 * numeric) and become numbers; timestamps become ISO strings; counts are already numbers.
 */
export function toAggregateDto (a: Aggregation, value: unknown) {
  let v: unknown = value
  if (value instanceof Date) v = value.toISOString()
  else if (value !== null && a.fn !== 'count' && a.field?.kind === 'attribute') v = Number(value)
  return { field: a.label, function: a.fn, value: v }
}
