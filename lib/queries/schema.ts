import { PagingQuery, SortOrder, Timestamp, Uuid, envelope } from '../schemas.js'
import * as objects from '../objects/index.js'
import { LIMITS } from './fields.js'

const FIELD_DESCRIPTION = 'id, typeId, publicId, workflowState, createdAt, updatedAt, geometry or attributes.<name> (dots reach nested keys)'

const { limit: Limit, offset: Offset } = PagingQuery

// The filter grammar is recursive; ajv checks this outer shape of each top-level filter and
// lib/queries/parse-filter.ts checks every level (the same paths, e.g. filters[0].filters[1].operator).
export const Filter = {
  type: 'object',
  description: 'A leaf {field, operator, value[, distanceMeters]} or a combination {operator: and|or|not, filters}. ' +
    'Comparison operators (short forms): equals (eq), notEquals (ne), in, notIn, greaterThan (gt), greaterThanOrEqual (gte), ' +
    'lessThan (lt), lessThanOrEqual (lte), contains, startsWith, endsWith, exists, notExists, isNull, isNotNull. ' +
    'On geometry: within, contains, intersects (value: a GeoJSON geometry, positions [longitude, latitude]; planar in lon/lat, 2D), dwithin (value: a geometry, ' +
    'plus distanceMeters; on the sphere), bbox (value [minX, minY, maxX, maxY]). notEquals, notIn and not are exact ' +
    'complements: an object lacking the attribute matches them. Numbers compare numerically, strings as text, createdAt/updatedAt as times. ' +
    `Bounds: ${LIMITS.nodes} filters in all (${LIMITS.textFilters} of them contains, startsWith or endsWith), nesting ${LIMITS.depth} deep, ${LIMITS.inValues} values in in/notIn, strings of ` +
    `${LIMITS.stringLength} characters, ${LIMITS.geometryPositions} positions per geometry.`,
  properties: {
    field: { type: 'string', description: FIELD_DESCRIPTION },
    operator: { type: 'string', example: 'gte' },
    value: { description: 'Depends on the operator: a scalar, an array for in/notIn, a GeoJSON geometry, or bbox bounds' },
    distanceMeters: { type: 'number', minimum: 0, description: 'dwithin only: the distance on the sphere, in meters' },
    filters: { type: 'array', items: { type: 'object' }, description: 'and/or/not: the filters combined (not negates their AND)' }
  },
  example: { field: 'attributes.height', operator: 'gte', value: 10 }
} as const

const GraphBody = {
  type: 'object',
  additionalProperties: false,
  description: 'Expands relations from the start objects in one recursive query. The start objects are objectIds when given ' +
    '(filters then do not apply), else the page of results. Expanded objects are not filtered; deleted relations are not followed.',
  properties: {
    objectIds: { type: 'array', items: Uuid, minItems: 1, maxItems: LIMITS.objectIds, description: 'The start objects (unknown ids are skipped)' },
    maxDepth: { type: 'integer', minimum: 0, maximum: LIMITS.maxDepth, default: 1, description: `Relation hops from the start, 0..${LIMITS.maxDepth}` },
    relationTypes: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 128 }, minItems: 1, maxItems: LIMITS.relationTypes, description: 'Follow only these relation types' },
    relationDirection: { type: 'string', enum: ['outgoing', 'incoming', 'all'], default: 'all' }
  }
} as const

export const RunQueryBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    filters: { type: 'array', maxItems: LIMITS.topLevelFilters, items: Filter, description: 'Combined with AND' },
    sorts: {
      type: 'array',
      maxItems: LIMITS.sorts,
      description: 'Earlier entries take precedence; id breaks ties. Default createdAt asc',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['field'],
        properties: { field: { type: 'string', description: FIELD_DESCRIPTION.replace('geometry or ', '') }, order: SortOrder }
      }
    },
    limit: Limit,
    offset: Offset,
    graph: GraphBody,
    aggregations: {
      type: 'array',
      maxItems: LIMITS.aggregations,
      description: 'Over the whole filtered set, not the page. count takes any field or *; sum and avg numeric attributes; ' +
        'min and max numeric attributes, createdAt, updatedAt, publicId or workflowState. Not combinable with graph.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['field', 'function'],
        properties: {
          field: { type: 'string', example: 'attributes.height' },
          function: { type: 'string', enum: ['count', 'sum', 'avg', 'min', 'max'] }
        }
      }
    },
    asOf: { ...Timestamp, description: 'Transaction time: objects as the database held them then' }
  },
  example: {
    filters: [{ field: 'geometry', operator: 'bbox', value: [13.0, 52.3, 13.8, 52.7] }, { operator: 'or', filters: [{ field: 'attributes.height', operator: 'gt', value: 10 }, { field: 'workflowState', operator: 'eq', value: 'approved' }] }],
    sorts: [{ field: 'attributes.height', order: 'desc' }],
    limit: 50,
    aggregations: [{ field: '*', function: 'count' }, { field: 'attributes.height', function: 'avg' }]
  }
} as const

export const QueryObjectsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    typeId: Uuid,
    status: { type: 'string', minLength: 1, maxLength: 128, description: 'Filters workflowState' },
    limit: Limit,
    offset: Offset,
    sortBy: { type: 'string', default: 'createdAt', description: FIELD_DESCRIPTION.replace('geometry or ', '') },
    sortOrder: SortOrder,
    asOf: { ...Timestamp, description: 'Transaction time' }
  }
} as const

const Aggregations = {
  type: 'array',
  items: {
    type: 'object',
    required: ['field', 'function', 'value'],
    properties: {
      field: { type: 'string' },
      function: { type: 'string', enum: ['count', 'sum', 'avg', 'min', 'max'] },
      value: { description: 'A number; a timestamp string for min/max of createdAt/updatedAt; text for publicId/workflowState; null over no values' }
    }
  }
} as const

const Page = envelope(objects.schema.ObjectBody) as { properties: Record<string, unknown>, required: string[] }

export const QueryResult = {
  ...Page,
  properties: { ...Page.properties, aggregations: Aggregations }
} as const

export const GraphResult = {
  type: 'object',
  required: ['objects', 'relations', 'truncated'],
  properties: {
    objects: {
      type: 'array',
      items: { type: 'object', required: ['id', 'typeId', 'attributes'], properties: { id: Uuid, typeId: Uuid, attributes: { type: 'object' } } }
    },
    relations: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'fromObjectId', 'toObjectId', 'relationType', 'metadata'],
        properties: { id: Uuid, fromObjectId: Uuid, toObjectId: Uuid, relationType: { type: 'string' }, metadata: { type: 'object' } }
      }
    },
    truncated: { type: 'boolean', description: `true when more than ${LIMITS.graphNodes} objects were reachable; the nearest ones are returned` }
  }
} as const

export const RunQueryResult = {
  description: 'Without graph: a page of objects with aggregations; with graph: the expanded graph',
  oneOf: [QueryResult, GraphResult]
} as const
