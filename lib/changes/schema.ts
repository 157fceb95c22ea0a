import { Timestamp, Uuid } from '../schemas.js'
import * as objects from '../objects/index.js'
import * as layers from '../layers/index.js'

// Request and response schemas of the change feed (docs/behaviour.md "Change feed"); the OpenAPI
// document is built from these same objects.

export const MAX_LIMIT = 1000
export const KINDS = ['created', 'updated', 'transitioned', 'deleted', 'entered', 'left'] as const

const exportProps = layers.schema.ExportQuery.properties

export const ChangesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    since: { type: 'string', minLength: 1, maxLength: 200, description: 'A cursor this feed gave out (a change\'s cursor or a page\'s nextCursor): the changes after it. Absent: from the beginning; `now`: from the current end. A malformed, foreign or unknown cursor is 400, saying how to restart. On the stream, a Last-Event-ID header takes precedence' },
    limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: 100, description: 'Changes per page, 1..1000 (the stream ignores it)' },
    typeId: Uuid,
    bbox: exportProps.bbox,
    layer: { ...exportProps.layer, description: 'Slug of a layer definition: its filters select the objects (with typeId and bbox, all must hold)' },
    include: { type: 'string', enum: ['object', 'id'], default: 'object', description: '`object`: each change carries the object as of that change; `id`: ids and versions only' }
  }
} as const

export const Change = {
  type: 'object',
  required: ['cursor', 'kind', 'objectId', 'typeId', 'version', 'at'],
  properties: {
    cursor: { type: 'string', description: 'Opaque: resume after this change with since=<cursor> (or Last-Event-ID)' },
    kind: { type: 'string', enum: KINDS, description: 'entered and left only when the feed is filtered (bbox, layer, typeId): the object moved into or out of the selection' },
    objectId: Uuid,
    typeId: Uuid,
    version: { type: 'integer', description: 'The object\'s version this change made (a delete makes a version too)' },
    at: { ...Timestamp, description: 'When the change was written' },
    object: { ...objects.schema.ObjectBody, description: 'The object as of this change, as GET /v1/objects/{id} answers; absent for deleted and left, and with include=id' }
  }
} as const

export const ChangePage = {
  type: 'object',
  required: ['changes', 'nextCursor', 'hasMore'],
  properties: {
    changes: { type: 'array', items: Change },
    nextCursor: { type: 'string', description: 'Ask again with since=<nextCursor> for what follows; never behind the last change of the page' },
    hasMore: { type: 'boolean', description: 'true: more changes may follow at once (read on); false: the page reached the current end' }
  }
} as const
