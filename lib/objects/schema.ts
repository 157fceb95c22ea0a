import { PagingQuery, SortOrder, Timestamp, Uuid, envelope } from '../schemas.js'

const Geometry = {
  type: 'object',
  nullable: true,
  description: 'GeoJSON geometry (RFC 7946, WGS84), checked against the type\'s allowed geometry types. 2D only: ' +
    'every position is [longitude, latitude], longitude -180..180 and latitude -90..90, finite numbers; a third coordinate ' +
    '(an elevation) is refused with 400, as the geometry is stored in 2D; members other than type, coordinates ' +
    '(geometries) and bbox are refused; coordinates are returned with up to 9 decimal places.',
  example: { type: 'Point', coordinates: [13.4, 52.5] }
} as const

export const CreateObjectBody = {
  type: 'object',
  additionalProperties: false,
  required: ['typeId'],
  properties: {
    typeId: { ...Uuid, description: "The object type's id; the type needs a published version" },
    attributes: { type: 'object', description: "Validated against the type's published attributeSchema and rules. Values nest at most 64 levels, numbers are finite and strings hold no NUL character" },
    geometry: Geometry,
    validFrom: { ...Timestamp, description: 'Valid-time start; defaults to now' }
  }
} as const

export const CreateObjectsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['items'],
  properties: {
    items: { type: 'array', minItems: 1, maxItems: 1000, items: CreateObjectBody, description: 'Up to 1,000 objects, created all or none' }
  }
} as const

export const PatchObjectBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    attributes: { type: 'object', description: 'JSON merge patch (RFC 7396): null removes a key, objects merge, anything else replaces. The merged result is validated' },
    geometry: { ...Geometry, description: 'Replaces the geometry; null clears it (unless the type requires one)' },
    validFrom: { ...Timestamp, description: "Valid-time start of the new version; defaults to now, never before the current version's" }
  }
} as const

export const ObjectBody = {
  type: 'object',
  required: ['id', 'typeId', 'publicId', 'attributes', 'geometry', 'workflowState', 'version', 'validFrom', 'createdAt', 'updatedAt'],
  properties: {
    id: Uuid,
    objectId: { ...Uuid, description: 'Equal to id (list items)' },
    typeId: Uuid,
    publicId: { type: 'string', description: "From the type's publicIdTemplate at creation (at most 256 characters; never reused in the tenant, even after a delete), else the id" },
    attributes: { type: 'object' },
    geometry: Geometry,
    workflowState: { type: 'string', nullable: true },
    version: { type: 'integer', minimum: 1 },
    validFrom: Timestamp,
    createdAt: Timestamp,
    updatedAt: Timestamp
  }
} as const

export const ObjectList = envelope(ObjectBody)

export const CreateObjectsResult = {
  type: 'object',
  required: ['items'],
  properties: { items: { type: 'array', items: ObjectBody, description: 'The created objects, in the order given' } }
} as const

export const SORT_FIELD_PATTERN = '^(id|publicId|typeId|workflowState|createdAt|updatedAt|attributes\\.[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,4})$'

const TimeTravel = {
  asOf: { ...Timestamp, description: 'Transaction time: the state the database held then' },
  validAt: { ...Timestamp, description: 'Valid time: the state that was true in the world then' }
} as const

export const ListObjectsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...PagingQuery,
    typeId: Uuid,
    sortBy: { type: 'string', pattern: SORT_FIELD_PATTERN, default: 'createdAt', description: 'id, publicId, typeId, workflowState, createdAt, updatedAt or attributes.<name>' },
    sortOrder: SortOrder,
    ...TimeTravel
  }
} as const

export const GetObjectQuery = { type: 'object', additionalProperties: false, properties: TimeTravel } as const

export const HistoryQuery = { type: 'object', additionalProperties: false, properties: PagingQuery } as const

export const HistoryItem = {
  type: 'object',
  required: ['version', 'operation', 'validFrom', 'validTo', 'txFrom', 'txTo', 'actor', 'object', 'geometryRepair'],
  properties: {
    version: { type: 'integer' },
    operation: { type: 'string', enum: ['created', 'updated', 'deleted', 'transitioned'] },
    validFrom: Timestamp,
    validTo: { ...Timestamp, nullable: true },
    txFrom: Timestamp,
    txTo: { ...Timestamp, nullable: true },
    actor: { type: 'object', nullable: true, properties: { sub: { type: 'string' }, roles: { type: 'array', items: { type: 'string' } } } },
    object: ObjectBody,
    geometryRepair: {
      type: 'object',
      nullable: true,
      description: "Set when this version's write repaired the geometry sent (the object type's geometry.makeValid): what PostGIS found invalid",
      properties: { reason: { type: 'string', example: 'Self-intersection' }, location: { type: 'array', items: { type: 'number' }, nullable: true, example: [0.5, 0.5] } }
    }
  }
} as const

export const HistoryList = envelope(HistoryItem)
