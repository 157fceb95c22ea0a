import type { JobWithMetadata } from 'pg-boss'
import { parse } from '../../lib/validation.js'
import * as automation from '../../lib/automation/index.js'
import { AUTOMATION_TICK, type AutomationTickPayload } from '../../lib/queues/index.js'

/** automation.tick: pg-boss's scheduler sent one occurrence of a rule's schedule; queue its run. */
export async function handleAutomationTick (deps: automation.EngineDeps, jobs: Array<JobWithMetadata<AutomationTickPayload>>): Promise<void> {
  for (const job of jobs) {
    const data = parse<AutomationTickPayload>(AUTOMATION_TICK.payload, job.data)
    const log = deps.log.child({ queue: job.name, jobId: job.id, ruleId: data.ruleId })
    await automation.tick(automation.engineContext({ ...deps, log }, data.tenantId, job.id), data.ruleId, job.id, job.createdOn)
  }
}
