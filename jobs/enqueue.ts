import { fromKnex, type PgBoss } from 'pg-boss'
import type { Knex } from 'knex'
import type { JobSender } from '../lib/context.js'
import { QUEUES, type QueueContract } from './contracts.js'

/**
 * Creates every queue of the contract (idempotent: createQueue twice is fine) and applies the
 * contract's options to queues that already exist, so a changed option takes effect on deploy.
 * The policy is fixed at creation (pg-boss refuses to change it), so it is not re-applied.
 */
export async function createQueues (boss: PgBoss): Promise<void> {
  for (const q of QUEUES) {
    await boss.createQueue(q.name, { ...q.options })
    const { policy: _fixedAtCreation, ...changeable } = q.options as QueueContract['options']
    await boss.updateQueue(q.name, changeable)
  }
}

/** A JobSender over pg-boss that sends inside the caller's knex transaction when given one. */
export function pgBossSender (boss: PgBoss): JobSender {
  return {
    async send (queue, payload, opts) {
      const db = opts.db as Knex
      await boss.send(queue, payload, {
        ...(db.isTransaction ? { db: fromKnex(db as Knex.Transaction) } : {}),
        ...(opts.singletonKey !== undefined ? { singletonKey: opts.singletonKey } : {}),
        ...(opts.startAfterSeconds !== undefined ? { startAfter: opts.startAfterSeconds } : {})
      })
    },
    async sendMany (queue, payloads, opts) {
      if (payloads.length === 0) return
      const db = opts.db as Knex
      await boss.insert(queue, payloads.map(data => ({ data })), db.isTransaction ? { db: fromKnex(db as Knex.Transaction) } : {})
    }
  }
}
