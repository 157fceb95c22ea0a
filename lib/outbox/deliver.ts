import type { Db, Tx } from '../db.js'
import * as sql from './sql.js'

/**
 * Something that reacts to domain events (the automation engine registers one). It runs inside the
 * claim's transaction (`tx`): what it writes there commits together with the event's delivery.
 */
export type OutboxConsumer = (event: sql.OutboxRow, tx: Tx) => Promise<void>

export interface DeliveryResult { delivered: number, failed: number, pending: number }

/**
 * Claims up to `limit` undelivered events per tenant in order with SKIP LOCKED (so several
 * workers share the queue without double delivery), hands each to every consumer and marks it
 * delivered. A consumer failure leaves the event pending with attempts+1 and the error kept.
 * Delivery is at least once: a consumer that succeeded before a later failure in the same batch
 * ran anyway. Without `tenantId`, each tenant with pending events is claimed in a transaction of
 * its own: events are ordered per tenant, and a transaction then stays on one tenant's shard
 * (a tenant-sharded cluster cannot lock rows of several shards in one SELECT).
 */
export async function claimAndDeliver (db: Db, consumers: OutboxConsumer[], limit = 100, tenantId?: string): Promise<DeliveryResult> {
  const tenants = tenantId === undefined ? await sql.tenantsWithPending(db) : [tenantId]
  let delivered = 0
  let failed = 0
  for (const tenant of tenants) {
    const r = await deliverTenant(db, consumers, limit, tenant)
    delivered += r.delivered
    failed += r.failed
  }
  return { delivered, failed, pending: await sql.countPending(db, tenantId) }
}

async function deliverTenant (db: Db, consumers: OutboxConsumer[], limit: number, tenantId: string): Promise<{ delivered: number, failed: number }> {
  let delivered = 0
  let failed = 0
  await db.transaction(async tx => {
    for (const row of await sql.claimPending(tx, limit, tenantId)) {
      try {
        // A savepoint per event: a failing consumer's writes roll back, the claim goes on.
        await tx.transaction(async sp => { for (const consume of consumers) await consume(row, sp) })
        await sql.markDelivered(tx, row)
        delivered++
      } catch (err) {
        await sql.markFailed(tx, row, String((err as Error).message ?? err))
        failed++
      }
    }
  })
  return { delivered, failed }
}
