import type { Job } from 'pg-boss'
import { parse } from '../../lib/validation.js'
import * as automation from '../../lib/automation/index.js'
import { WEBHOOK_DELIVER, type WebhookDeliverPayload } from '../../lib/queues/index.js'

/** webhook.deliver: one attempt of an outgoing webhook; the next attempt is its own job. */
export async function handleWebhookDeliver (deps: automation.EngineDeps, jobs: Array<Job<WebhookDeliverPayload>>): Promise<void> {
  for (const job of jobs) {
    const data = parse<WebhookDeliverPayload>(WEBHOOK_DELIVER.payload, job.data)
    const log = deps.log.child({ queue: job.name, jobId: job.id, runId: data.runId, attempt: data.attempt })
    await automation.deliverAttempt(automation.engineContext({ ...deps, log }, data.tenantId, job.id), data.runId, data.attempt)
  }
}
