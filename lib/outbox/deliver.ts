import { withSavepoint, withTransaction, type Db, type Tx } from '../db.js'
import type { Logger } from '../log.js'
import { outboxDeliveryFailuresTotal } from '../metrics.js'
import * as sql from './sql.js'

/**
 * Something that reacts to domain events (the automation engine registers one). It runs inside the
 * claim's transaction (`tx`): what it writes there commits together with the event's delivery.
 * `batch`, when a consumer has it, takes a whole claim at once (in position order), so its reads
 * and writes cost a few statements per claim instead of a few per event.
 */
export interface OutboxConsumer {
  (event: sql.OutboxRow, tx: Tx): Promise<void>
  batch?: (events: sql.OutboxRow[], tx: Tx) => Promise<void>
}

export interface DeliveryResult { delivered: number, failed: number, pending: number }

export interface DeliveryOptions {
  /** Also claim events still waiting out a retry delay (POST /v1/outbox/flush: deliver now). */
  waiting?: boolean
  /**
   * Wait for events another claimer (a worker's dispatch) holds instead of skipping them, so that
   * what was pending when the call began has been delivered, by this call or by that claimer,
   * when it returns (POST /v1/outbox/flush).
   */
  waitForHeld?: boolean
  /** Where a failed delivery is reported (warn, with the error and the next attempt). */
  log?: Logger
}

/** A failed event's next attempt: 1 s after its first failure, doubling, at most this long. */
export const RETRY_MAX_SECONDS = 300

/** Seconds until the next attempt of an event that has now failed `failures` times (1, 2, 4, ... capped). */
export function retryDelaySeconds (failures: number): number {
  return Math.min(RETRY_MAX_SECONDS, 2 ** Math.min(Math.max(failures - 1, 0), 30))
}

async function consumeAll (consumers: OutboxConsumer[], rows: sql.OutboxRow[], tx: Tx): Promise<void> {
  for (const consume of consumers) {
    if (consume.batch !== undefined) await consume.batch(rows, tx)
    else for (const row of rows) await consume(row, tx)
  }
}

/** deliverPending, then the count of what is still pending: the flush's answer (POST /v1/outbox/flush). */
export async function claimAndDeliver (db: Db, consumers: OutboxConsumer[], limit = 1000, tenantId?: string, opts: DeliveryOptions = {}): Promise<DeliveryResult> {
  const r = await deliverPending(db, consumers, limit, tenantId, opts)
  return { ...r, pending: await sql.countPending(db, tenantId) }
}

/**
 * Claims up to `limit` undelivered events per tenant in order with SKIP LOCKED (so several
 * workers share the queue without double delivery), hands them to every consumer and marks them
 * delivered. Fast path: the whole claim in one savepoint and one statement marking it delivered.
 * When any consumer fails, that savepoint rolls back and the claim is delivered again event by
 * event (a savepoint each), so only the failing events stay pending with attempts+1 and the error
 * kept, held back for a growing delay (`retryDelaySeconds`; claims skip them until it passes,
 * unless `opts.waiting`), counted in outbox_delivery_failures_total and logged (warn) on `opts.log`.
 * Delivery is at least once. Without `tenantId`, each tenant with pending events is claimed in a
 * transaction of its own: events are ordered per tenant, and a transaction then stays on one
 * tenant's shard (a tenant-sharded cluster cannot lock rows of several shards in one SELECT).
 * A dispatch job calls this in passes until one delivers nothing, which is its check for more;
 * it counts nothing itself (under steady writes, a count after every pass would be a second scan
 * of the pending index).
 */
export async function deliverPending (db: Db, consumers: OutboxConsumer[], limit = 1000, tenantId?: string, opts: DeliveryOptions = {}): Promise<Omit<DeliveryResult, 'pending'>> {
  const tenants = tenantId === undefined ? await sql.tenantsWithPending(db, 1000, opts.waiting) : [tenantId]
  let delivered = 0
  let failed = 0
  for (const tenant of tenants) {
    const r = await deliverTenant(db, consumers, limit, tenant, opts)
    delivered += r.delivered
    failed += r.failed
  }
  return { delivered, failed }
}

async function deliverTenant (db: Db, consumers: OutboxConsumer[], limit: number, tenantId: string, opts: DeliveryOptions): Promise<{ delivered: number, failed: number }> {
  let delivered = 0
  let failed = 0
  const failures: Array<{ row: sql.OutboxRow, err: unknown, retryInSeconds: number }> = []
  await withTransaction(db, async tx => {
    const rows = await sql.claimPending(tx, limit, tenantId, opts.waiting, opts.waitForHeld)
    if (rows.length === 0) return
    try {
      await withSavepoint(tx, sp => consumeAll(consumers, rows, sp))
      await sql.markDelivered(tx, tenantId, rows)
      delivered = rows.length
      return
    } catch { /* one event (at least) failed: deliver one by one below */ }
    for (const row of rows) {
      try {
        await withSavepoint(tx, sp => consumeAll(consumers, [row], sp))
        await sql.markDelivered(tx, tenantId, [row])
        delivered++
      } catch (err) {
        const retryInSeconds = retryDelaySeconds(row.attempts + 1)
        await sql.markFailed(tx, row, String((err as Error).message ?? err), retryInSeconds)
        failures.push({ row, err, retryInSeconds })
        failed++
      }
    }
  })
  // Reported once the failure is recorded (committed).
  for (const { row, err, retryInSeconds } of failures) {
    outboxDeliveryFailuresTotal.inc({ type: row.type })
    opts.log?.warn({ err, eventId: row.id, tenantId: row.tenant_id, type: row.type, attempts: row.attempts + 1, retryInSeconds }, 'outbox event delivery failed; retrying later')
  }
  return { delivered, failed }
}
