import { PagingQuery, Timestamp, Uuid, envelope } from '../schemas.js'

export const MAX_METADATA_FILTERS = 20

const RelationType = {
  type: 'string',
  minLength: 1,
  maxLength: 128,
  description: 'Free-form category chosen by the client, e.g. "feeds" or "contains"',
  example: 'feeds'
} as const

export const CreateRelationBody = {
  type: 'object',
  additionalProperties: false,
  required: ['fromObjectId', 'toObjectId', 'relationType'],
  properties: {
    fromObjectId: { ...Uuid, description: 'The object the link starts at; must exist in the tenant' },
    toObjectId: { ...Uuid, description: 'The object the link points to; must exist in the tenant and differ from fromObjectId' },
    relationType: RelationType,
    metadata: { type: 'object', description: 'Free-form JSON object; default {}' },
    inheritsGeometry: { type: 'boolean', description: "When true the target may render with the from-object's geometry; default false" }
  }
} as const

export const PatchRelationBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    relationType: RelationType,
    metadata: { type: 'object', description: 'JSON merge patch (RFC 7396) of metadata: null removes a key' },
    inheritsGeometry: { type: 'boolean' }
  }
} as const

export const RelationBody = {
  type: 'object',
  required: ['id', 'fromObjectId', 'toObjectId', 'relationType', 'metadata', 'inheritsGeometry', 'deletedAt', 'createdAt', 'updatedAt'],
  properties: {
    id: Uuid,
    fromObjectId: Uuid,
    toObjectId: Uuid,
    relationType: { type: 'string' },
    metadata: { type: 'object' },
    inheritsGeometry: { type: 'boolean' },
    deletedAt: { ...Timestamp, nullable: true, description: 'Set while the relation is soft-deleted' },
    createdAt: Timestamp,
    updatedAt: Timestamp
  }
} as const

export const RelationList = envelope(RelationBody)

const IncludeDeleted = { type: 'boolean', default: false, description: 'Also list soft-deleted relations' } as const

// `metadata.<key>=<value>` parameters cannot be declared one by one; the route passes them
// beside this schema and they are described in the operation's description.
export const ListRelationsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...PagingQuery,
    fromObjectId: Uuid,
    toObjectId: Uuid,
    relationType: { type: 'string', minLength: 1, maxLength: 128 },
    includeDeleted: IncludeDeleted
  }
} as const

export const ObjectRelationsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...PagingQuery,
    direction: { type: 'string', enum: ['outgoing', 'incoming', 'all'], default: 'all', description: 'outgoing: links from the object; incoming: links to it' },
    relationType: { type: 'string', minLength: 1, maxLength: 128 },
    includeDeleted: IncludeDeleted
  }
} as const

export const METADATA_FILTER_DESCRIPTION = 'Besides the declared parameters, any number (up to ' + MAX_METADATA_FILTERS +
  ') of `metadata.<key>=<value>` parameters filter on metadata: the value at that key (a dotted path reaches nested keys) ' +
  'must be a JSON scalar whose text equals the parameter (`metadata.priority=2` matches 2 and "2", `metadata.ok=true` matches true, ' +
  '`metadata.note=null` matches null and "null" but not a missing key; objects and arrays never match). ' +
  'All filters combine with AND. Default order: createdAt, then id.'
