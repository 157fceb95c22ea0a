import type { Job } from 'pg-boss'
import type { Db } from '../../lib/db.js'
import type { Logger } from '../../lib/log.js'
import * as outbox from '../../lib/outbox/index.js'
import type { OutboxDispatchPayload } from '../../lib/queues/index.js'

export interface DispatchDeps {
  db: Db
  log: Logger
  /** Who receives domain events (the worker's composition root names them: automation, layers). */
  consumers: outbox.OutboxConsumer[]
}

/**
 * Delivers pending outbox events until a pass delivers nothing: none are left, or what is left
 * waits out a retry delay or failed again (events that commit meanwhile are delivered by the
 * passes that follow).
 */
export async function handleOutboxDispatch (deps: DispatchDeps, jobs: Array<Job<OutboxDispatchPayload>>): Promise<void> {
  for (const job of jobs) {
    const jlog = deps.log.child({ queue: job.name, jobId: job.id })
    for (;;) {
      const r = await outbox.deliverPending(deps.db, deps.consumers, 1000, job.data?.tenantId, { log: jlog })
      jlog.debug(r, 'outbox batch')
      if (r.delivered === 0) break
    }
  }
}
