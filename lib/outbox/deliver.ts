import type { Db, Tx } from '../db.js'
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

async function consumeAll (consumers: OutboxConsumer[], rows: sql.OutboxRow[], tx: Tx): Promise<void> {
  for (const consume of consumers) {
    if (consume.batch !== undefined) await consume.batch(rows, tx)
    else for (const row of rows) await consume(row, tx)
  }
}

/**
 * Claims up to `limit` undelivered events per tenant in order with SKIP LOCKED (so several
 * workers share the queue without double delivery), hands them to every consumer and marks them
 * delivered. Fast path: the whole claim in one savepoint and one statement marking it delivered.
 * When any consumer fails, that savepoint rolls back and the claim is delivered again event by
 * event (a savepoint each), so only the failing events stay pending with attempts+1 and the error
 * kept. Delivery is at least once. Without `tenantId`, each tenant with pending events is claimed in a transaction of
 * its own: events are ordered per tenant, and a transaction then stays on one tenant's shard
 * (a tenant-sharded cluster cannot lock rows of several shards in one SELECT).
 */
export async function claimAndDeliver (db: Db, consumers: OutboxConsumer[], limit = 1000, tenantId?: string): Promise<DeliveryResult> {
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
    const rows = await sql.claimPending(tx, limit, tenantId)
    if (rows.length === 0) return
    try {
      await tx.transaction(sp => consumeAll(consumers, rows, sp))
      await sql.markDelivered(tx, tenantId, rows)
      delivered = rows.length
      return
    } catch { /* one event (at least) failed: deliver one by one below */ }
    for (const row of rows) {
      try {
        await tx.transaction(sp => consumeAll(consumers, [row], sp))
        await sql.markDelivered(tx, tenantId, [row])
        delivered++
      } catch (err) {
        await sql.markFailed(tx, row, String((err as Error).message ?? err))
        failed++
      }
    }
  })
  return { delivered, failed }
}
