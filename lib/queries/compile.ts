import type { Geometry } from '../geo/index.js'
import { Fragment, join, sql, trusted } from './fragment.js'
import type { AttributeField, Aggregation, ColumnField, CompareOp, FilterNode, Scalar, Sort, ValueField } from './types.js'

// Typed tree -> parameterised SQL over the object source aliased `o`.
//
// Truth: a predicate holds or it does not. SQL's NULL (an absent attribute, a null column)
// counts as "does not hold", and negation (not, notEquals, notIn) is `(p) IS NOT TRUE`, so
// an object lacking an attribute satisfies `notEquals` and `not`: each negation is the exact
// complement of its positive form.

const SQL_COMPARE: Record<CompareOp, string> = { eq: '=', ne: '=', gt: '>', gte: '>=', lt: '<', lte: '<=' }
const COLUMN_CAST = { uuid: '::uuid', text: '::text', time: '::timestamptz' } as const

/** The jsonb value at an attribute path; SQL NULL when the key is absent. */
function attr (f: AttributeField): Fragment {
  return sql`(o.attributes #> ${f.path}::text[])`
}

function not (p: Fragment): Fragment {
  return sql`((${p}) IS NOT TRUE)`
}

function nested (path: string[], value: Scalar): unknown {
  return path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value)
}

function typeOf (v: Scalar): string {
  return typeof v === 'number' ? 'number' : typeof v === 'string' ? 'string' : 'boolean'
}

// Equality on an attribute. The `@>` conjunct lets the GIN index objects_attributes_gin
// (jsonb_path_ops) find candidates; the `=` conjunct is the exact test (jsonb numbers compare
// numerically: 1 = 1.0). A path with a numeric key may index an array, which `@>` would not
// see, so it is left out there.
function attributeEquals (f: AttributeField, v: Scalar): Fragment {
  const exact = sql`${attr(f)} = ${JSON.stringify(v)}::jsonb`
  if (f.path.some(p => /^\d+$/.test(p))) return exact
  return sql`(o.attributes @> ${JSON.stringify(nested(f.path, v))}::jsonb AND ${exact})`
}

// Order comparisons on an attribute compare jsonb to jsonb of the same JSON type: numbers
// numerically, strings by collation. No cast is ever applied to stored data, so a stored
// value of another type simply does not match (never a cast error). An expression index on
// (attributes #> '{name}') serves these for a hot attribute (README).
function attributeCompare (f: AttributeField, op: CompareOp, v: Scalar): Fragment {
  if (op === 'eq') return attributeEquals(f, v)
  if (op === 'ne') return not(attributeEquals(f, v))
  return sql`(jsonb_typeof(${attr(f)}) = ${typeOf(v)} AND ${attr(f)} ${trusted(SQL_COMPARE[op])} ${JSON.stringify(v)}::jsonb)`
}

function columnCompare (f: ColumnField, op: CompareOp, v: Scalar): Fragment {
  const p = sql`${trusted(f.column)} ${trusted(SQL_COMPARE[op])} ${v}${trusted(COLUMN_CAST[f.type])}`
  return op === 'ne' ? not(p) : p
}

function inList (f: ValueField, values: Scalar[]): Fragment {
  if (f.kind === 'attribute') return sql`${attr(f)} = ANY(${values.map(v => JSON.stringify(v))}::jsonb[])`
  return sql`${trusted(f.column)} = ANY(${values.map(String)}${trusted(COLUMN_CAST[f.type] + '[]')})`
}

/** LIKE with the client's text taken literally: its \, % and _ are escaped. */
function likePattern (op: 'contains' | 'startsWith' | 'endsWith', text: string): string {
  const lit = text.replace(/[\\%_]/g, c => `\\${c}`)
  return op === 'startsWith' ? `${lit}%` : op === 'endsWith' ? `%${lit}` : `%${lit}%`
}

function textMatch (f: ValueField, op: 'contains' | 'startsWith' | 'endsWith', text: string): Fragment {
  const pattern = likePattern(op, text)
  if (f.kind === 'column') return sql`${trusted(f.column)} LIKE ${pattern}`
  return sql`(jsonb_typeof(${attr(f)}) = 'string' AND (o.attributes #>> ${f.path}::text[]) LIKE ${pattern})`
}

function presence (node: Extract<FilterNode, { kind: 'presence' }>): Fragment {
  const present = node.op === 'exists' || node.op === 'isNotNull'
  if (node.field.kind === 'attribute') {
    const a = attr(node.field)
    switch (node.op) {
      case 'exists': return sql`(${a} IS NOT NULL)`
      case 'notExists': return sql`(${a} IS NULL)`
      case 'isNull': return sql`(coalesce(jsonb_typeof(${a}), 'null') = 'null')`
      case 'isNotNull': return sql`(coalesce(jsonb_typeof(${a}), 'null') <> 'null')`
    }
  }
  const column = node.field.kind === 'geometry' ? 'o.geom' : node.field.column
  return trusted(`(${column} IS ${present ? 'NOT ' : ''}NULL)`)
}

function geometryParam (g: Geometry): Fragment {
  return sql`ST_SetSRID(ST_Force2D(ST_GeomFromGeoJSON(${JSON.stringify(g)}::text)), 4326)`
}

// within / contains / intersects are planar in lon/lat (PostGIS geometry); each is
// index-aware, so objects_tenant_geom_gist prefilters by bounding box.
const SPATIAL_FN = { within: 'ST_Within', contains: 'ST_Contains', intersects: 'ST_Intersects' } as const

function spatial (node: FilterNode): Fragment {
  switch (node.kind) {
    case 'spatial':
      return sql`${trusted(SPATIAL_FN[node.op])}(o.geom, ${geometryParam(node.geometry)})`
    case 'dwithin':
      // On the sphere (use_spheroid false), in meters. objects_tenant_geog_gist, an index on
      // (geom::geography), serves it: PostGIS adds `&& _ST_Expand(...)` itself.
      return sql`ST_DWithin(o.geom::geography, ${geometryParam(node.geometry)}::geography, ${node.meters}::float8, false)`
    case 'bbox': {
      // && uses objects_tenant_geom_gist; ST_Intersects keeps the answer exact for non-point objects
      // whose own box overlaps the bounds while the geometry does not.
      const [minX, minY, maxX, maxY] = node.bounds
      const env = sql`ST_MakeEnvelope(${minX}::float8, ${minY}::float8, ${maxX}::float8, ${maxY}::float8, 4326)`
      return sql`(o.geom && ${env} AND ST_Intersects(o.geom, ${env}))`
    }
    default: throw new Error(`not a spatial node: ${node.kind}`)
  }
}

export function compileFilter (node: FilterNode): Fragment {
  switch (node.kind) {
    case 'and': return sql`(${join(node.children.map(compileFilter), ' AND ')})`
    case 'or': return sql`(${join(node.children.map(compileFilter), ' OR ')})`
    case 'not': return not(join(node.children.map(compileFilter), ' AND '))
    case 'compare': return node.field.kind === 'attribute' ? attributeCompare(node.field, node.op, node.value) : columnCompare(node.field, node.op, node.value)
    case 'in': return node.negate ? not(inList(node.field, node.values)) : inList(node.field, node.values)
    case 'text': return textMatch(node.field, node.op, node.value)
    case 'presence': return presence(node)
    default: return spatial(node)
  }
}

export function whereClause (node: FilterNode | null): Fragment {
  if (node === null) return trusted('TRUE')
  return compileFilter(node)
}

function sortKey (f: ValueField): Fragment {
  return f.kind === 'attribute' ? attr(f) : trusted(f.column)
}

/**
 * ORDER BY: the client's keys, then id as the tie-breaker (in the first key's direction) so
 * pages are stable. NOT NULL columns omit NULLS LAST, which lets a btree index give the order.
 */
export function orderBy (sorts: Sort[]): Fragment {
  const keys = sorts.map(s => {
    const dir = s.order === 'desc' ? ' DESC' : ' ASC'
    const nullable = s.field.kind === 'attribute' || s.field.nullable
    return sql`${sortKey(s.field)}${trusted(dir + (nullable ? ' NULLS LAST' : ''))}`
  })
  // publicId is unique per tenant: a tie-breaker after it would only defeat its index.
  if (!sorts.some(s => s.field.kind === 'column' && (s.field.name === 'id' || s.field.name === 'publicId'))) keys.push(trusted(`o.id ${sorts[0]?.order === 'desc' ? 'DESC' : 'ASC'}`))
  return join(keys, ', ')
}

/** A numeric attribute value, or NULL for any other JSON type (so no cast can fail). */
function numeric (f: AttributeField): Fragment {
  return sql`CASE WHEN jsonb_typeof(${attr(f)}) = 'number' THEN (${attr(f)})::numeric END`
}

/**
 * One select-list expression per aggregation, aliased a0, a1...: count over objects where the
 * field is present and not null; sum/avg/min/max over numeric attribute values (others are
 * ignored); min/max of timestamps and text columns as such.
 */
export function aggregateList (aggs: Aggregation[]): Fragment {
  return join(aggs.map((a, i) => sql`${aggregate(a)} AS ${trusted(`a${i}`)}`), ', ')
}

function aggregate (a: Aggregation): Fragment {
  const f = a.field
  if (a.fn === 'count') {
    if (f === null) return trusted('count(*)')
    if (f.kind === 'column') return sql`count(${trusted(f.column)})`
    return sql`count(*) FILTER (WHERE coalesce(jsonb_typeof(${attr(f)}), 'null') <> 'null')`
  }
  const fn = trusted(a.fn)
  if (f === null) throw new Error('only count takes *')
  return f.kind === 'attribute' ? sql`${fn}(${numeric(f)})` : sql`${fn}(${trusted(f.column)})`
}
