import type { Job } from 'pg-boss'
import type { Db } from '../../lib/db.js'
import type { Logger } from '../../lib/log.js'
import * as outbox from '../../lib/outbox/index.js'
import type { OutboxDispatchPayload } from '../contracts.js'

/** Consumers of domain events; the automation engine adds itself here. */
export const outboxConsumers: outbox.OutboxConsumer[] = []

/**
 * Delivers pending outbox events until a pass delivers nothing: none are left, or what is left
 * waits out a retry delay or failed again (events that commit meanwhile are delivered by the
 * passes that follow).
 */
export async function handleOutboxDispatch (db: Db, log: Logger, jobs: Array<Job<OutboxDispatchPayload>>): Promise<void> {
  for (const job of jobs) {
    const jlog = log.child({ queue: job.name, jobId: job.id })
    for (;;) {
      const r = await outbox.deliverPending(db, outboxConsumers, 1000, job.data?.tenantId, { log: jlog })
      jlog.debug(r, 'outbox batch')
      if (r.delivered === 0) break
    }
  }
}
