import type { Db, Queryable } from '../db.js'
import type { JobSender } from '../context.js'
import { TILES_PRERENDER } from '../../jobs/contracts.js'
import * as sql from './sql.js'

/**
 * Outbox consumer (run by the worker, which owns the queues): an object event queues a
 * tiles.prerender for every layer of the tenant that may select objects of the event's type (its
 * typeId, or no typeId filter); a layer created or updated queues its own. One job per layer at
 * a time (the queue's `stately` policy on singletonKey tenant:layer), however many edits come.
 * It reads and sends on the claim's transaction when given one (the outbox passes it): in
 * embedded mode the pool's one connection is that transaction's, so the pool would refuse.
 */
export function prerenderOnObjectEvents (db: Db, jobs: JobSender) {
  return async (event: { tenant_id: string, type: string, payload: unknown }, tx: Queryable = db): Promise<void> => {
    const payload = event.payload as { object?: { typeId?: string }, layer?: { id?: string } } | null
    const send = (layerId: string) => jobs.send(TILES_PRERENDER.name, { tenantId: event.tenant_id, layerId }, { db: tx, singletonKey: `${event.tenant_id}:${layerId}` })
    if ((event.type === 'layer.created' || event.type === 'layer.updated') && payload?.layer?.id !== undefined) return send(payload.layer.id)
    const typeId = event.type.startsWith('object.') ? payload?.object?.typeId : undefined
    if (typeId === undefined) return
    for (const layer of await sql.layersForType(tx, event.tenant_id, typeId)) await send(layer.id)
  }
}
