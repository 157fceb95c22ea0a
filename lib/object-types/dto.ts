import type { TypeWithLatest } from './sql.js'

export function toObjectTypeDto (t: TypeWithLatest) {
  const d = t.latest.definition
  return {
    id: t.id,
    key: t.key,
    name: d.name,
    description: d.description,
    attributeSchema: d.attributeSchema,
    geometry: { ...d.geometry, makeValid: d.geometry.makeValid ?? false },
    validationRules: d.validationRules,
    workflowId: d.workflowId,
    publicIdTemplate: d.publicIdTemplate,
    version: t.latest_version,
    status: t.latest.status,
    publishedVersion: t.published_version,
    createdAt: t.created_at.toISOString(),
    updatedAt: t.updated_at.toISOString()
  }
}

export type ObjectTypeDto = ReturnType<typeof toObjectTypeDto>
