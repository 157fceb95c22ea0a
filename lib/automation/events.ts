import type { JobSender } from '../context.js'
import type { Tx } from '../db.js'
import type * as outbox from '../outbox/index.js'
import { AUTOMATION_RUN } from '../queues/contracts.js'
import * as sql from './sql.js'
import { MAX_CAUSATION_DEPTH, recordStoppedRun, type TriggerSpec } from './trigger.js'

// The outbox consumer: each domain event starts a run of every live rule whose object-event
// trigger lists it. It runs inside the outbox claim's transaction, so the runs and their jobs
// commit together with the events' delivery, in commit order per tenant (outbox position).
// A claim costs per tenant one read of its live event rules, one insert of all its runs and one
// insert of their jobs, however many events it holds.

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

const triggers = (row: outbox.OutboxRow) => row.type.startsWith('object.') || row.type === 'automation.run.failed'

/** The runs one event starts, in rule order. */
function specsFor (row: outbox.OutboxRow, rules: sql.LiveRule[]): TriggerSpec[] {
  const p = (row.payload ?? {}) as EventPayload
  const specs: TriggerSpec[] = []
  for (const rule of rules) {
    const trigger = rule.live_content.trigger
    if (trigger.type !== 'object.event' || !(trigger.events as string[]).includes(row.type)) continue
    if (trigger.typeId !== undefined && row.type.startsWith('object.') && p.object?.typeId !== trigger.typeId) continue
    specs.push({
      ruleId: rule.id, ruleVersion: rule.live_version, key: `event:${row.id}`, depth: p.causation?.depth ?? 0, input: inputOf(row, p),
      trigger: { type: 'object.event', event: row.type, eventId: row.id, ...(p.causation ? { causedBy: p.causation } : {}) }
    })
  }
  return specs
}

async function queueTenantRuns (tx: Tx, tenantId: string, rows: outbox.OutboxRow[], jobs: JobSender | null): Promise<void> {
  const rules = await sql.liveEventRules(tx, tenantId)
  if (rules.length === 0) return
  const runs: sql.NewRun[] = []
  for (const row of rows) {
    for (const spec of specsFor(row, rules)) {
      if (spec.depth >= MAX_CAUSATION_DEPTH) {
        await recordStoppedRun(tx, tenantId, spec, `not run: this event is ${spec.depth} automation steps away from a user's change (the limit is ${MAX_CAUSATION_DEPTH}); a rule probably triggers itself`)
      } else {
        runs.push({ rule_id: spec.ruleId, rule_version: spec.ruleVersion, trigger: spec.trigger, trigger_key: spec.key, depth: spec.depth, input: spec.input })
      }
    }
  }
  const created = await sql.insertRuns(tx, tenantId, runs)
  if (created.length === 0) return
  if (jobs === null) throw new Error('automation runs need a job sender (the app was built without pg-boss)')
  const payloads = created.map(runId => ({ tenantId, runId }))
  if (jobs.sendMany !== undefined) await jobs.sendMany(AUTOMATION_RUN.name, payloads, { db: tx })
  else for (const p of payloads) await jobs.send(AUTOMATION_RUN.name, p, { db: tx })
}

/** Starts the runs of a claim's events, tenant by tenant, each tenant's in outbox order. */
async function consumeEvents (rows: outbox.OutboxRow[], tx: Tx, jobs: JobSender | null): Promise<void> {
  const byTenant = new Map<string, outbox.OutboxRow[]>()
  for (const row of rows) {
    if (!triggers(row)) continue
    const list = byTenant.get(row.tenant_id)
    if (list === undefined) byTenant.set(row.tenant_id, [row])
    else list.push(row)
  }
  for (const [tenantId, list] of byTenant) await queueTenantRuns(tx, tenantId, list, jobs)
}

export function eventConsumer (jobs: JobSender | null): outbox.OutboxConsumer {
  const one = (row: outbox.OutboxRow, tx: Tx) => consumeEvents([row], tx, jobs)
  return Object.assign(one, { batch: (rows: outbox.OutboxRow[], tx: Tx) => consumeEvents(rows, tx, jobs) })
}
