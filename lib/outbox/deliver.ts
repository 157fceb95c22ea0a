import type { Db } from '../db.js'

export interface OutboxRow {
  id: string
  position: number
  tenant_id: string
  type: string
  aggregate_type: string
  aggregate_id: string
  payload: unknown
  created_at: Date
  attempts: number
}

/** Something that reacts to domain events (the automation engine registers one). */
export type OutboxConsumer = (event: OutboxRow) => Promise<void>

export interface DeliveryResult { delivered: number, failed: number, pending: number }

/**
 * Claims up to `limit` undelivered events in order with SKIP LOCKED (so several workers share
 * the queue without double delivery), hands each to every consumer and marks it delivered.
 * A consumer failure leaves the event pending with attempts+1 and the error kept.
 */
export async function claimAndDeliver (db: Db, consumers: OutboxConsumer[], limit = 100, tenantId?: string): Promise<DeliveryResult> {
  let delivered = 0
  let failed = 0
  await db.transaction(async tx => {
    const q = tx('outbox_events').whereNull('delivered_at').orderBy('position').limit(limit).forUpdate().skipLocked().select('*')
    if (tenantId !== undefined) q.where({ tenant_id: tenantId })
    const rows: OutboxRow[] = await q
    for (const row of rows) {
      try {
        for (const consume of consumers) await consume(row)
        await tx('outbox_events').where({ id: row.id }).update({ delivered_at: tx.fn.now(), attempts: row.attempts + 1, last_error: null })
        delivered++
      } catch (err) {
        await tx('outbox_events').where({ id: row.id }).update({ attempts: row.attempts + 1, last_error: String((err as Error).message ?? err).slice(0, 2000) })
        failed++
      }
    }
  })
  const pq = db('outbox_events').whereNull('delivered_at').count<{ count: number }[]>('* as count')
  if (tenantId !== undefined) pq.where({ tenant_id: tenantId })
  const [{ count }] = await pq
  return { delivered, failed, pending: Number(count) }
}
