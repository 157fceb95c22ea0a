import type { SequencedRow } from './sql.js'

/** The audit event of docs/behaviour.md "Audit": snake_case row -> API shape; occurredAt is ISO UTC with milliseconds. */
export function toEventDto (r: SequencedRow) {
  return {
    id: r.id,
    sequence: r.sequence,
    type: r.type,
    actor: r.actor,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    data: r.data,
    occurredAt: r.occurred_at.toISOString(),
    previousHash: r.previous_hash,
    hash: r.hash
  }
}

export type AuditEventDto = ReturnType<typeof toEventDto>
