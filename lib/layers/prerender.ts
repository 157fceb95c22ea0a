import type { Db } from '../db.js'
import type { JobSender } from '../context.js'
import { TILES_PRERENDER } from '../../jobs/contracts.js'
import * as sql from './sql.js'

/**
 * Outbox consumer: an object event queues a tiles.prerender for every layer of the tenant that
 * may select objects of the event's type (its typeId, or no typeId filter). One job per layer
 * at a time (the queue's `stately` policy on singletonKey tenant:layer), however many edits come.
 */
export function prerenderOnObjectEvents (db: Db, jobs: JobSender) {
  return async (event: { tenant_id: string, type: string, payload: unknown }): Promise<void> => {
    if (!event.type.startsWith('object.')) return
    const typeId = (event.payload as { object?: { typeId?: string } } | null)?.object?.typeId
    if (typeId === undefined) return
    for (const layer of await sql.layersForType(db, event.tenant_id, typeId)) {
      await jobs.send(TILES_PRERENDER.name, { tenantId: event.tenant_id, layerId: layer.id }, { db, singletonKey: `${event.tenant_id}:${layer.id}` })
    }
  }
}
