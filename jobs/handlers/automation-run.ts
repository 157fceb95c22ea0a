import type { Job } from 'pg-boss'
import { parse } from '../../lib/validation.js'
import * as automation from '../../lib/automation/index.js'
import { AUTOMATION_RUN, type AutomationRunPayload } from '../../lib/queues/index.js'

/**
 * automation.run: executes the queued runs of a fetched batch, each in its own transaction, side
 * by side. An infrastructure failure fails the batch once every run of it has settled, so pg-boss
 * retries it (a run already finished finds itself done and does nothing; its unique trigger key
 * and row lock keep every effect once).
 */
export async function handleAutomationRun (deps: automation.EngineDeps, jobs: Array<Job<AutomationRunPayload>>): Promise<void> {
  const settled = await Promise.allSettled(jobs.map(async job => {
    const data = parse<AutomationRunPayload>(AUTOMATION_RUN.payload, job.data)
    const log = deps.log.child({ queue: job.name, jobId: job.id, runId: data.runId })
    const ctx = automation.engineContext({ ...deps, log }, data.tenantId, job.id)
    const lastTry = job.retryCount >= AUTOMATION_RUN.options.retryLimit
    await automation.executeRun(ctx, data.runId, lastTry)
    log.debug('automation run done')
  }))
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (failed !== undefined) throw failed.reason
}
