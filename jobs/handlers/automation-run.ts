import type { Job } from 'pg-boss'
import { parse } from '../../lib/validation.js'
import * as automation from '../../lib/automation/index.js'
import { AUTOMATION_RUN, type AutomationRunPayload } from '../contracts.js'

/**
 * automation.run: executes one queued run. An infrastructure failure propagates, so pg-boss
 * retries (the run stays queued; its unique trigger key and row lock keep the effect once).
 */
export async function handleAutomationRun (deps: automation.EngineDeps, jobs: Array<Job<AutomationRunPayload>>): Promise<void> {
  for (const job of jobs) {
    const data = parse<AutomationRunPayload>(AUTOMATION_RUN.payload, job.data)
    const log = deps.log.child({ queue: job.name, jobId: job.id, runId: data.runId })
    const ctx = automation.engineContext({ ...deps, log }, data.tenantId, job.id)
    const lastTry = job.retryCount >= AUTOMATION_RUN.options.retryLimit
    await automation.executeRun(ctx, data.runId, lastTry)
    log.debug('automation run done')
  }
}
