import { PagingQuery, Timestamp, Uuid, envelope } from '../schemas.js'

// Request and response schemas of lib/layers (docs/behaviour.md "Layers and exports"); the OpenAPI
// document is built from these same objects.

export const SLUG_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$'
/** Export page size (docs/behaviour.md "Layers and exports"): default 1000, at most 10,000. */
export const MAX_EXPORT_LIMIT = 10_000
/** OGC items: default page, and the maximum a larger `limit` is clamped to. */
export const OGC_DEFAULT_LIMIT = 100
export const OGC_MAX_LIMIT = 10_000
export const MAX_ZOOM = 18

const Bbox = { type: 'array', minItems: 4, maxItems: 4, items: { type: 'number' }, description: '[minX, minY, maxX, maxY] in lon/lat' } as const
const FieldList = {
  type: 'array', maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 1100 },
  description: 'Exported fields: id, typeId, publicId, attributes, attributes.<name>, geometry, workflowState, createdAt, updatedAt'
} as const

const Filters = {
  type: 'object',
  additionalProperties: false,
  description: 'Selection of objects; every key present must hold (AND)',
  properties: {
    typeId: { ...Uuid, description: 'Objects of this type: a type of this tenant, not deleted (any status), else 400 on definition.filters.typeId' },
    workflowState: { type: 'string', minLength: 1, maxLength: 256 },
    attributes: {
      type: 'object', maxProperties: 50, description: 'attribute name -> value it must equal (string, number or boolean)',
      additionalProperties: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] }
    },
    bbox: Bbox,
    query: { type: 'array', maxItems: 100, items: { type: 'object' }, description: 'Filters of the query DSL (POST /v1/queries/objects/run), combined with AND' }
  }
} as const

const Definition = {
  type: 'object',
  additionalProperties: false,
  properties: { filters: Filters, fields: FieldList }
} as const

const CacheTtl = { type: 'integer', minimum: 0, maximum: 31_536_000, description: 'Lifetime of cached renderings and of Cache-Control max-age; 0 turns caching off. Default LAYER_CACHE_TTL_SECONDS (3600)' } as const
const Name = { type: 'string', minLength: 1, maxLength: 256 } as const
const Description = { type: 'string', maxLength: 4096, nullable: true } as const
const Slug = { type: 'string', pattern: SLUG_PATTERN, description: 'Used as `layer` and in tile paths; unique per tenant', example: 'poles' } as const

export const CreateLayerBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'slug'],
  properties: { name: Name, slug: Slug, description: Description, definition: Definition, cacheTtlSeconds: CacheTtl }
} as const

export const PatchLayerBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { name: Name, slug: Slug, description: Description, definition: Definition, cacheTtlSeconds: CacheTtl }
} as const

export const LayerBody = {
  type: 'object',
  required: ['id', 'name', 'slug', 'description', 'definition', 'cacheTtlSeconds', 'version', 'createdAt', 'updatedAt'],
  properties: {
    id: Uuid,
    name: { type: 'string' },
    slug: { type: 'string' },
    description: { type: 'string', nullable: true },
    definition: Definition,
    cacheTtlSeconds: { type: 'integer' },
    version: { type: 'integer', description: '1 on create, +1 on every PATCH' },
    createdAt: Timestamp,
    updatedAt: Timestamp
  }
} as const

export const LayerList = envelope(LayerBody)

export const ListLayersQuery = { type: 'object', additionalProperties: false, properties: { ...PagingQuery } } as const

const LayerParam = { type: 'string', pattern: SLUG_PATTERN, description: 'Slug of a layer definition' } as const
const BboxParam = { type: 'string', maxLength: 200, description: 'minX,minY,maxX,maxY (lon/lat, WGS84)', example: '13.3,52.4,13.5,52.6' } as const
const FieldsParam = { type: 'string', maxLength: 4096, description: 'Comma-separated fields, e.g. typeId,attributes.name' } as const
const AsOfParam = { ...Timestamp, description: 'The layer as the database held it at this time' } as const

export const ExportQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    layer: LayerParam,
    typeId: Uuid,
    bbox: BboxParam,
    fields: FieldsParam,
    asOf: AsOfParam,
    limit: { type: 'integer', minimum: 1, maximum: MAX_EXPORT_LIMIT, default: 1000, description: 'Features per page, 1..10000' },
    offset: PagingQuery.offset
  }
} as const

export const StreamQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { layer: LayerParam, typeId: Uuid, bbox: BboxParam, fields: FieldsParam, asOf: AsOfParam }
} as const

export const TileQuery = { type: 'object', additionalProperties: false, properties: { asOf: AsOfParam } } as const

export const OgcItemsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: OGC_MAX_LIMIT, default: OGC_DEFAULT_LIMIT, description: `Features per page; a larger value is clamped to ${OGC_MAX_LIMIT}` },
    offset: PagingQuery.offset,
    bbox: BboxParam,
    datetime: { type: 'string', maxLength: 100, description: 'An instant or interval (a/b, ../b, a/..) on updatedAt (RFC 3339)' },
    f: { type: 'string', enum: ['json', 'geojson'], description: 'Output format; only GeoJSON is served' }
  }
} as const

export const OgcFeaturesQuery: { type: 'object', additionalProperties: false, required: string[], properties: Record<string, object> } = {
  type: 'object',
  additionalProperties: false,
  required: ['layer'],
  properties: { layer: LayerParam, limit: OgcItemsQuery.properties.limit, offset: PagingQuery.offset, bbox: BboxParam }
}

export const OgcSimpleQuery = { type: 'object', additionalProperties: false, properties: { f: OgcItemsQuery.properties.f } } as const

const Link = {
  type: 'object',
  required: ['href', 'rel', 'type'],
  properties: { href: { type: 'string' }, rel: { type: 'string' }, type: { type: 'string' }, title: { type: 'string' } }
} as const
const Links = { type: 'array', items: Link } as const

export const FeatureCollection = {
  type: 'object',
  required: ['type', 'features'],
  properties: {
    type: { type: 'string', enum: ['FeatureCollection'] },
    features: { type: 'array', items: { type: 'object' } },
    numberMatched: { type: 'integer' },
    numberReturned: { type: 'integer' },
    timeStamp: Timestamp,
    links: Links
  }
} as const

export const OgcDocument = { type: 'object', properties: { links: Links }, additionalProperties: true } as const

export const TileJson = {
  type: 'object',
  required: ['tilejson', 'tiles', 'vector_layers'],
  properties: {
    tilejson: { type: 'string', enum: ['3.0.0'] },
    name: { type: 'string' },
    tiles: { type: 'array', items: { type: 'string' } },
    bounds: { type: 'array', items: { type: 'number' } },
    minzoom: { type: 'integer' },
    maxzoom: { type: 'integer' },
    vector_layers: { type: 'array', items: { type: 'object' } }
  }
} as const
