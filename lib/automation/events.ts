import type { JobSender } from '../context.js'
import type { Tx } from '../db.js'
import type * as outbox from '../outbox/index.js'
import * as sql from './sql.js'
import { MAX_CAUSATION_DEPTH, queueRun, recordStoppedRun, type TriggerSpec } from './trigger.js'

// The outbox consumer: each domain event starts a run of every live rule whose object-event
// trigger lists it. It runs inside the outbox claim's transaction, so the runs and their jobs
// commit together with the event's delivery, in commit order per tenant (outbox position).

interface EventPayload {
  object?: { typeId?: string }
  previous?: unknown
  causation?: { depth: number, ruleId: string, runId: string }
  [k: string]: unknown
}

/** The payload match and condition see: {event, object, previous} (or the run-failed fields). */
function inputOf (row: outbox.OutboxRow, p: EventPayload): Record<string, unknown> {
  if (row.type.startsWith('object.')) return { event: row.type, object: p.object ?? null, previous: p.previous ?? null }
  const { causation: _c, ...rest } = p
  return { event: row.type, ...rest }
}

export function eventConsumer (jobs: JobSender | null): outbox.OutboxConsumer {
  return async (row, tx: Tx) => {
    if (!row.type.startsWith('object.') && row.type !== 'automation.run.failed') return
    const rules = await sql.liveRulesForEvent(tx, row.tenant_id, row.type)
    if (rules.length === 0) return
    const p = (row.payload ?? {}) as EventPayload
    const depth = p.causation?.depth ?? 0
    const input = inputOf(row, p)
    for (const rule of rules) {
      const trigger = rule.live_content.trigger
      if (trigger.type !== 'object.event') continue
      if (trigger.typeId !== undefined && row.type.startsWith('object.') && p.object?.typeId !== trigger.typeId) continue
      const spec: TriggerSpec = {
        ruleId: rule.id, ruleVersion: rule.live_version, key: `event:${row.id}`, depth, input,
        trigger: { type: 'object.event', event: row.type, eventId: row.id, ...(p.causation ? { causedBy: p.causation } : {}) }
      }
      if (depth >= MAX_CAUSATION_DEPTH) {
        await recordStoppedRun(tx, row.tenant_id, spec, `not run: this event is ${depth} automation steps away from a user's change (the limit is ${MAX_CAUSATION_DEPTH}); a rule probably triggers itself`)
      } else {
        await queueRun(tx, row.tenant_id, jobs, spec)
      }
    }
  }
}
