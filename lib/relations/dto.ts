import type { RelationRow } from './sql.js'

export function toRelationDto (r: RelationRow) {
  return {
    id: r.id,
    fromObjectId: r.from_object_id,
    toObjectId: r.to_object_id,
    relationType: r.relation_type,
    metadata: r.metadata,
    inheritsGeometry: r.inherits_geometry,
    deletedAt: r.deleted_at?.toISOString() ?? null,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString()
  }
}

export type RelationDto = ReturnType<typeof toRelationDto>
