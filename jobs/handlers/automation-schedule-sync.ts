import type { Job } from 'pg-boss'
import { parse } from '../../lib/validation.js'
import * as automation from '../../lib/automation/index.js'
import { AUTOMATION_SCHEDULE_SYNC, type AutomationScheduleSyncPayload } from '../../lib/queues/index.js'

/** automation.schedule-sync: a rule was published, deactivated or deleted; align its pg-boss schedule. */
export async function handleScheduleSync (deps: automation.EngineDeps, scheduler: automation.Scheduler, jobs: Array<Job<AutomationScheduleSyncPayload>>): Promise<void> {
  for (const job of jobs) {
    const data = parse<AutomationScheduleSyncPayload>(AUTOMATION_SCHEDULE_SYNC.payload, job.data)
    const log = deps.log.child({ queue: job.name, jobId: job.id, ruleId: data.ruleId })
    const done = await automation.syncSchedule(automation.engineContext({ ...deps, log }, data.tenantId, job.id), data.ruleId, scheduler)
    log.info({ done }, 'rule schedule synced')
  }
}
