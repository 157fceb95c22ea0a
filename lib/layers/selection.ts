import { validationError } from '../errors.js'
import * as queries from '../queries/index.js'
import type { LayerDefinition } from './sql.js'

// What an export selects and shows: the layer's filters and the request's (typeId, bbox, asOf)
// as one typed filter tree of the query DSL (lib/queries: same parser, same compiler), and the
// field selection. Pure: no database.

type FilterNode = queries.FilterNode
const { sql, trusted, join } = queries

export const PROPERTY_COLUMNS = ['typeId', 'publicId', 'workflowState', 'createdAt', 'updatedAt'] as const
export type PropertyColumn = typeof PROPERTY_COLUMNS[number]

export interface FieldSelection {
  columns: PropertyColumn[]
  /** 'all': the whole attributes object; otherwise these paths (none when empty). */
  attributes: 'all' | string[][]
}

export const ALL_FIELDS: FieldSelection = { columns: [...PROPERTY_COLUMNS], attributes: 'all' }

/** Field names -> selection; a 400 names `at(i)` for the offending entry. Empty -> all fields. */
export function parseFields (names: string[], at: (i: number) => string): FieldSelection {
  if (names.length === 0) return ALL_FIELDS
  const columns = new Set<PropertyColumn>()
  let attributes: FieldSelection['attributes'] = []
  names.forEach((name, i) => {
    if (name === 'id' || name === 'geometry') return // always present on a Feature
    if (name === 'attributes') { attributes = 'all'; return }
    const f = queries.resolveField(name, at(i))
    if (f.kind === 'attribute') { if (attributes !== 'all') attributes.push(f.path); return }
    if (!(PROPERTY_COLUMNS as readonly string[]).includes(f.name)) throw validationError(at(i), `unknown field "${name}"`)
    columns.add(f.name as PropertyColumn)
  })
  return { columns: PROPERTY_COLUMNS.filter(c => columns.has(c)), attributes }
}

/** `minX,minY,maxX,maxY` -> numbers, within lon/lat range and ordered; 400 on `at` otherwise. */
export function parseBbox (raw: string | number[], at: string): [number, number, number, number] {
  const parts = typeof raw === 'string' ? raw.split(',').map(s => s.trim() === '' ? NaN : Number(s)) : raw
  if (parts.length !== 4 || parts.some(n => !Number.isFinite(n))) throw validationError(at, 'must be four numbers: minX,minY,maxX,maxY')
  const [x1, y1, x2, y2] = parts
  if (x1 < -180 || x2 > 180 || y1 < -90 || y2 > 90) throw validationError(at, 'must lie within -180..180 (x) and -90..90 (y)')
  if (x1 > x2 || y1 > y2) throw validationError(at, 'min must not exceed max (boxes across the antimeridian are not supported)')
  return [x1, y1, x2, y2]
}

function leaf (field: string, operator: string, value: unknown, at: string): FilterNode {
  return queries.parseFilters([{ field, operator, value }], at) as FilterNode
}

/** A layer's definition.filters -> one filter tree (null: everything). 400s name the path. */
export function layerFilter (def: LayerDefinition): FilterNode | null {
  const f = def.filters ?? {}
  const at = 'definition.filters'
  const nodes: FilterNode[] = []
  if (f.typeId !== undefined) nodes.push(leaf('typeId', 'equals', f.typeId, `${at}.typeId`))
  if (f.workflowState !== undefined) nodes.push(leaf('workflowState', 'equals', f.workflowState, `${at}.workflowState`))
  for (const [name, value] of Object.entries(f.attributes ?? {})) {
    nodes.push(leaf(`attributes.${name}`, 'equals', value, `${at}.attributes.${name}`))
  }
  if (f.bbox !== undefined) nodes.push(leaf('geometry', 'bbox', parseBbox(f.bbox, `${at}.bbox`), `${at}.bbox`))
  const query = queries.parseFilters(f.query, `${at}.query`)
  if (query !== null) nodes.push(query)
  return and(nodes)
}

export function and (nodes: Array<FilterNode | null>): FilterNode | null {
  const list = nodes.filter((n): n is FilterNode => n !== null)
  return list.length === 0 ? null : list.length === 1 ? list[0] : { kind: 'and', children: list }
}

/** The request's own narrowing: typeId and bbox. */
export function requestFilter (q: { typeId?: string, bbox?: string }): FilterNode | null {
  return and([
    q.typeId === undefined ? null : leaf('typeId', 'equals', q.typeId, 'typeId'),
    q.bbox === undefined ? null : leaf('geometry', 'bbox', parseBbox(q.bbox, 'bbox'), 'bbox')
  ])
}

// ---- SQL fragments over the object source `o` ----

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
const COLUMN_SQL: Record<PropertyColumn, string> = {
  typeId: 'o.type_id',
  publicId: 'o.public_id',
  workflowState: 'o.workflow_state',
  createdAt: `to_char(o.created_at AT TIME ZONE 'UTC', ${ISO})`,
  updatedAt: `to_char(o.updated_at AT TIME ZONE 'UTC', ${ISO})`
}

interface PathTree { [key: string]: PathTree | string[] }

/** Paths -> a tree; a path that is a prefix of another takes the whole subtree. */
function pathTree (paths: string[][]): PathTree {
  const root: PathTree = {}
  for (const path of paths) {
    let node = root
    for (let i = 0; i < path.length; i++) {
      const key = path[i]
      if (i === path.length - 1) { node[key] = path; break }
      const next = node[key]
      if (Array.isArray(next)) break // a shorter path already takes this whole subtree
      node = (node[key] ??= {}) as PathTree
    }
  }
  return root
}

function nestedAttributes (tree: PathTree): queries.Fragment {
  const pairs = Object.entries(tree).map(([key, sub]) => Array.isArray(sub)
    ? sql`${key}::text, o.attributes #> ${sub}::text[]`
    : sql`${key}::text, ${nestedAttributes(sub)}`)
  return pairs.length === 0 ? trusted("'{}'::jsonb") : sql`jsonb_build_object(${join(pairs, ', ')})`
}

/** GeoJSON `properties`: the selected columns, attributes nested as stored. */
export function propertiesSql (fields: FieldSelection): queries.Fragment {
  const pairs = fields.columns.map(c => trusted(`'${c}', ${COLUMN_SQL[c]}`))
  if (fields.attributes === 'all') pairs.push(trusted("'attributes', o.attributes"))
  else if (fields.attributes.length > 0) pairs.push(sql`'attributes', ${nestedAttributes(pathTree(fields.attributes))}`)
  return sql`json_build_object(${join(pairs, ', ')})`
}

/** One GeoJSON Feature per object, as json. */
export function featureSql (fields: FieldSelection): queries.Fragment {
  return sql`json_build_object('type', 'Feature', 'id', o.id, 'geometry', ST_AsGeoJSON(o.geom)::json, 'properties', ${propertiesSql(fields)})`
}

// MVT properties are flat: `attributes.<name>` keys, objects and arrays as JSON text
// (docs/behaviour.md "Layers and exports").
const MVT_VALUE = (v: string) => `CASE WHEN jsonb_typeof(${v}) IN ('object', 'array') THEN to_jsonb((${v})::text) ELSE ${v} END`

/**
 * The selected attributes' stored values for a tile, read once per object: columns `a0`, `a1`,
 * ... of a row over `o` (`a`: the whole attributes object when all are selected). A tile
 * statement selects them in a subquery that is not flattened (OFFSET 0), and builds the
 * properties over its columns with mvtAttributesSql; flattened, each value's expression would
 * be copied into the CASE and the path read three times per attribute and feature.
 */
export function mvtValueColumns (fields: FieldSelection): queries.Fragment[] {
  if (fields.attributes === 'all') return [trusted('o.attributes AS a')]
  return fields.attributes.map((p, i) => sql`o.attributes #> ${p}::text[] AS ${trusted(`a${i}`)}`)
}

/** A jsonb of the selected attributes for ST_AsMVT (it encodes each key as a property), over the columns of mvtValueColumns in row `r`. */
export function mvtAttributesSql (fields: FieldSelection, r: string): queries.Fragment {
  if (fields.attributes === 'all') {
    return trusted(`(SELECT coalesce(jsonb_object_agg('attributes.' || e.key, ${MVT_VALUE('e.value')}), '{}'::jsonb) FROM jsonb_each(${r}.a) e)`)
  }
  if (fields.attributes.length === 0) return trusted("'{}'::jsonb")
  const pairs = fields.attributes.map((p, i) => sql`${`attributes.${p.join('.')}`}::text, ${trusted(MVT_VALUE(`${r}.a${i}`))}`)
  return sql`jsonb_strip_nulls(jsonb_build_object(${join(pairs, ', ')}))`
}

export function whereSql (node: FilterNode | null): queries.Fragment {
  return queries.whereClause(node)
}
