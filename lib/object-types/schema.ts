import { Timestamp, Uuid, PagingQuery, envelope } from '../schemas.js'
import { GEOMETRY_TYPES } from '../geo/index.js'

export const TYPE_KEY_PATTERN = '^[a-z][a-z0-9_-]{0,62}$'

const GeometryRules = {
  type: 'object',
  additionalProperties: false,
  properties: {
    required: { type: 'boolean', default: false },
    types: { type: 'array', items: { type: 'string', enum: [...GEOMETRY_TYPES] }, uniqueItems: true, description: 'Allowed GeoJSON types; empty or absent allows all' },
    makeValid: { type: 'boolean', default: false, description: 'Repair a geometry PostGIS finds invalid (ST_MakeValid) instead of refusing it with 400; the history shows the repair' }
  }
} as const

const ValidationRule = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'rule', 'message'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    rule: { type: 'object', description: 'JsonLogic over {typeId, attributes, geometry, workflowState}; truthy passes' },
    message: { type: 'string', minLength: 1, maxLength: 500 }
  }
} as const

const definitionFields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  description: { type: 'string', maxLength: 2000, nullable: true },
  attributeSchema: { type: 'object', description: 'JSON Schema (type object) for attributes', nullable: true },
  geometry: GeometryRules,
  validationRules: { type: 'array', items: ValidationRule, maxItems: 100 },
  workflowId: { ...Uuid, nullable: true },
  publicIdTemplate: { type: 'string', minLength: 1, maxLength: 200, nullable: true, example: 'PIPE-{{year}}-{{seq:5}}' }
} as const

export const CreateObjectTypeBody = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'name'],
  properties: { key: { type: 'string', pattern: TYPE_KEY_PATTERN }, ...definitionFields }
} as const

export const PatchObjectTypeBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: definitionFields
} as const

export const ValidateBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    attributes: { type: 'object' },
    geometry: { type: 'object', nullable: true },
    // The upper bound is the version column's (integer): a larger one would reach Postgres as a 500.
    version: { type: 'integer', minimum: 1, maximum: 2147483647, description: 'Defaults to the latest version' }
  }
} as const

export const ValidateResult = {
  type: 'object',
  required: ['valid', 'errors', 'version'],
  properties: {
    valid: { type: 'boolean' },
    version: { type: 'integer' },
    errors: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, reason: { type: 'string' }, location: { type: 'array', items: { type: 'number' }, nullable: true, description: 'Where PostGIS found the geometry invalid, [x, y]' } } } }
  }
} as const

export const ObjectTypeBody = {
  type: 'object',
  required: ['id', 'key', 'name', 'version', 'status', 'createdAt', 'updatedAt'],
  properties: {
    id: Uuid,
    key: { type: 'string' },
    ...definitionFields,
    version: { type: 'integer', description: 'The latest version' },
    status: { type: 'string', enum: ['draft', 'sandbox', 'published'], description: 'Status of the latest version' },
    publishedVersion: { type: 'integer', nullable: true, description: 'The version objects validate against' },
    createdAt: Timestamp,
    updatedAt: Timestamp
  }
} as const

export const ObjectTypeList = envelope(ObjectTypeBody)

export const ListObjectTypesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { ...PagingQuery, status: { type: 'string', enum: ['draft', 'sandbox', 'published'] }, key: { type: 'string' } }
} as const
