// The typed query tree. The parser (parse.ts) is the only producer: every value in it has
// been checked for form and size, so the compiler (compile.ts) never has to re-validate.

import type { Geometry } from '../geo/index.js'

export type ColumnName = 'id' | 'typeId' | 'publicId' | 'workflowState' | 'createdAt' | 'updatedAt'

export interface ColumnField {
  kind: 'column'
  name: ColumnName
  /** The column of the object source `o`: a constant of fields.ts, never client text. */
  column: string
  type: 'uuid' | 'text' | 'time'
  nullable: boolean
}

/** attributes.<a>.<b>: addressed with `#>` and a bound text[] path. */
export interface AttributeField { kind: 'attribute', name: string, path: string[] }
export interface GeometryField { kind: 'geometry', name: 'geometry' }
export type Field = ColumnField | AttributeField | GeometryField
export type ValueField = ColumnField | AttributeField

export type Scalar = string | number | boolean
export type CompareOp = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte'
export type TextOp = 'contains' | 'startsWith' | 'endsWith'
export type PresenceOp = 'exists' | 'notExists' | 'isNull' | 'isNotNull'
export type SpatialOp = 'within' | 'contains' | 'intersects'

export type FilterNode =
  | { kind: 'and' | 'or' | 'not', children: FilterNode[] }
  | { kind: 'compare', field: ValueField, op: CompareOp, value: Scalar }
  | { kind: 'in', field: ValueField, negate: boolean, values: Scalar[] }
  | { kind: 'text', field: ValueField, op: TextOp, value: string }
  | { kind: 'presence', field: Field, op: PresenceOp }
  | { kind: 'spatial', op: SpatialOp, geometry: Geometry }
  | { kind: 'dwithin', geometry: Geometry, meters: number }
  | { kind: 'bbox', bounds: [number, number, number, number] }

export interface Sort { field: ValueField, order: 'asc' | 'desc' }

export type AggregateFunction = 'count' | 'sum' | 'avg' | 'min' | 'max'
export interface Aggregation {
  /** As the client wrote it, echoed in the result. */
  label: string
  field: ValueField | null
  fn: AggregateFunction
}

export interface GraphSpec {
  objectIds: string[] | null
  maxDepth: number
  relationTypes: string[] | null
  direction: 'outgoing' | 'incoming' | 'all'
}

export interface Query {
  filter: FilterNode | null
  sorts: Sort[]
  limit: number
  offset: number
  aggregations: Aggregation[]
  graph: GraphSpec | null
  asOf?: string
}
