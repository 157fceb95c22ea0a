import type { PgBoss } from 'pg-boss'
import { QUEUES, type QueueContract } from './contracts.js'

/**
 * Creates every queue of the contract (idempotent: createQueue twice is fine) and applies the
 * contract's options to queues that already exist, so a changed option takes effect on deploy.
 * Run by the release job (db/release.ts) and again by every worker's start: the API only sends,
 * and a send to a queue that does not exist fails, so the queues must exist before any process
 * serves (docs/operations.md "Processes start in any order").
 * The policy is fixed at creation (pg-boss refuses to change it), so it is not re-applied.
 */
export async function createQueues (boss: PgBoss): Promise<void> {
  for (const q of QUEUES) {
    await boss.createQueue(q.name, { ...q.options })
    const { policy: _fixedAtCreation, ...changeable } = q.options as QueueContract['options']
    await boss.updateQueue(q.name, changeable)
  }
}
