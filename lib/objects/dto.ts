import type { ObjectRow, VersionRow } from './sql.js'

export function toObjectDto (r: ObjectRow) {
  return {
    id: r.id,
    typeId: r.type_id,
    publicId: r.public_id,
    attributes: r.attributes,
    geometry: r.geometry,
    workflowState: r.workflow_state,
    version: r.version,
    validFrom: r.valid_from.toISOString(),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString()
  }
}

export type ObjectDto = ReturnType<typeof toObjectDto>

export function toHistoryItem (r: VersionRow) {
  return {
    version: r.version,
    operation: r.operation,
    validFrom: r.valid_from.toISOString(),
    validTo: r.valid_to?.toISOString() ?? null,
    txFrom: r.tx_from.toISOString(),
    txTo: r.tx_to?.toISOString() ?? null,
    actor: r.actor,
    object: toObjectDto(r),
    geometryRepair: r.geometry_repair
  }
}
