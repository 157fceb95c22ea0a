import type { Job } from 'pg-boss'
import { parse } from '../../lib/validation.js'
import * as automation from '../../lib/automation/index.js'
import { WEBHOOK_DELIVER, type WebhookDeliverPayload } from '../../lib/queues/index.js'

/**
 * webhook.deliver: one attempt of an outgoing webhook; the next attempt is its own job. Resolves to
 * the seconds until the soonest next attempt queued, if any (the worker looks for it then).
 */
export async function handleWebhookDeliver (deps: automation.EngineDeps, jobs: Array<Job<WebhookDeliverPayload>>): Promise<number | null> {
  let soonest: number | null = null
  for (const job of jobs) {
    const data = parse<WebhookDeliverPayload>(WEBHOOK_DELIVER.payload, job.data)
    const log = deps.log.child({ queue: job.name, jobId: job.id, runId: data.runId, attempt: data.attempt })
    const next = await automation.deliverAttempt(automation.engineContext({ ...deps, log }, data.tenantId, job.id), data.runId, data.attempt)
    if (next !== null && (soonest === null || next < soonest)) soonest = next
  }
  return soonest
}
