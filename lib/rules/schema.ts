import { PagingQuery, Timestamp, Uuid, envelope } from '../schemas.js'

export const RULE_KEY_PATTERN = '^[a-z][a-z0-9_-]{0,62}$'
export const SPATIAL_OPERATORS = ['within', 'intersects', 'contains', 'dwithin', 'disjoint'] as const
export const RULE_KINDS = ['jsonlogic', 'spatial'] as const

// Condition fields shared by inline guards (lib/workflows) and reusable rules: a jsonlogic rule's
// definition is {rule, message?}, a spatial rule's is {operator, geometry, distanceMeters?, message?},
// exactly the fields of the matching inline guard without `type`.
export const conditionMessage = {
  type: 'string', minLength: 1, maxLength: 500,
  description: 'Shown as the reason when the condition does not hold'
} as const

export const logicFields = {
  rule: { description: 'JsonLogic over {object, user: {sub, roles}, now}; truthy passes', example: { '>=': [{ var: 'object.attributes.height' }, 2] } },
  message: conditionMessage
} as const

export const spatialFields = {
  operator: { type: 'string', enum: [...SPATIAL_OPERATORS], description: "How the object's geometry relates to `geometry` (evaluated by PostGIS)" },
  geometry: { type: 'object', description: 'GeoJSON geometry (WGS84) the object is compared with. Positions are [longitude, latitude]; the comparison is 2D, as stored geometries are (a third coordinate is ignored)', example: { type: 'Polygon', coordinates: [[[13, 52], [14, 52], [14, 53], [13, 53], [13, 52]]] } },
  distanceMeters: { type: 'number', minimum: 0, maximum: 20100000, description: 'dwithin only (and required there): meters, measured on the sphere' },
  message: conditionMessage
} as const

const RuleDefinition = {
  type: 'object',
  additionalProperties: false,
  description: 'kind jsonlogic: {rule, message?}; kind spatial: {operator, geometry, distanceMeters?, message?}',
  properties: { ...spatialFields, ...logicFields }
} as const

const name = { type: 'string', minLength: 1, maxLength: 200 } as const

export const CreateRuleBody = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'name', 'kind', 'definition'],
  properties: {
    key: { type: 'string', pattern: RULE_KEY_PATTERN, description: 'Unique per tenant' },
    name,
    kind: { type: 'string', enum: [...RULE_KINDS], description: 'Fixed at creation' },
    definition: RuleDefinition
  }
} as const

export const PatchRuleBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { name, definition: RuleDefinition }
} as const

export const RuleBody = {
  type: 'object',
  required: ['id', 'key', 'name', 'kind', 'definition', 'version', 'status', 'publishedVersion', 'createdAt', 'updatedAt'],
  properties: {
    id: Uuid,
    key: { type: 'string' },
    name: { type: 'string' },
    kind: { type: 'string', enum: [...RULE_KINDS] },
    definition: RuleDefinition,
    version: { type: 'integer', description: 'The latest version' },
    status: { type: 'string', enum: ['draft', 'sandbox', 'published'], description: 'Status of the latest version' },
    publishedVersion: { type: 'integer', nullable: true, description: 'The version guards evaluate' },
    createdAt: Timestamp,
    updatedAt: Timestamp
  }
} as const

export const RuleList = envelope(RuleBody)

export const ListRulesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...PagingQuery,
    kind: { type: 'string', enum: [...RULE_KINDS] },
    status: { type: 'string', enum: ['draft', 'sandbox', 'published'], description: 'Status of the latest version' },
    key: { type: 'string' }
  }
} as const
