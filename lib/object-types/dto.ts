import type { TypeWithLatest, VersionRow } from './sql.js'

export function toObjectTypeDto (t: TypeWithLatest) {
  const d = t.latest.definition
  return {
    id: t.id,
    key: t.key,
    name: d.name,
    description: d.description,
    attributeSchema: d.attributeSchema,
    geometry: d.geometry,
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

export function toRegistryVersion (v: VersionRow) {
  return {
    version: v.version,
    status: v.status,
    definition: v.definition,
    createdAt: v.created_at.toISOString(),
    createdBy: v.created_by,
    sandboxAt: v.sandbox_at?.toISOString() ?? null,
    publishedAt: v.published_at?.toISOString() ?? null
  }
}
