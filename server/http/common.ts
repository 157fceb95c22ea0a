import { Uuid } from '../../lib/schemas.js'

// Parameter and header declarations several routes share (for the OpenAPI document).

export const idParam = { id: { description: 'Resource id (UUID)', schema: Uuid } }

export const IfMatchRequired = { 'If-Match': { description: 'The current version: 3, "3" or W/"3"', required: true, schema: { type: 'string' } } }
export const IfMatchOptional = { 'If-Match': { description: 'When present, the write happens only at this version', required: false, schema: { type: 'string' } } }
export const ETagHeader = { ETag: { description: 'The version, quoted', schema: { type: 'string' } } }
