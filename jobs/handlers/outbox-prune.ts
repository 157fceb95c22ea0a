import type { Db } from '../../lib/db.js'
import type { Logger } from '../../lib/log.js'
import * as outbox from '../../lib/outbox/index.js'

/** outbox.prune: retention of delivered outbox events (scheduled hourly by the worker). */
export async function handleOutboxPrune (db: Db, log: Logger, retentionHours: number): Promise<void> {
  const pruned = await outbox.pruneDelivered(db, retentionHours)
  log.info({ queue: 'outbox.prune', pruned }, 'delivered outbox events pruned')
}
