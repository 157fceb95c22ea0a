import type { Db, Queryable } from '../db.js'
import type { JobSender } from '../context.js'
import { TILES_PRERENDER } from '../queues/contracts.js'
import * as sql from './sql.js'

type ObjectEvent = { tenant_id: string, type: string, payload: unknown }

/**
 * Outbox consumer (run by the worker, which owns the queues): an object event queues a
 * tiles.prerender for every layer of the tenant that may select objects of the event's type (its
 * typeId, or no typeId filter); a layer created or updated queues its own. One job per layer at
 * a time (the queue's `stately` policy on singletonKey tenant:layer), however many edits come.
 * It reads and sends on the claim's transaction when given one (the outbox passes it): in
 * embedded mode the pool's one connection is that transaction's, so the pool would refuse.
 */
export function prerenderOnObjectEvents (db: Db, jobs: JobSender) {
  // A claim's events (one tenant's, in order): one query for all their object types, one job per
  // layer however many of its events touch it.
  const consume = async (events: ObjectEvent[], tx: Queryable): Promise<void> => {
    const layerIds = new Map<string, Set<string>>() // tenant -> layers to prerender
    const typeIds = new Map<string, Set<string>>() // tenant -> object types changed
    const add = (m: Map<string, Set<string>>, tenant: string, id: string) => {
      let ids = m.get(tenant)
      if (ids === undefined) m.set(tenant, ids = new Set())
      ids.add(id)
    }
    for (const event of events) {
      const payload = event.payload as { object?: { typeId?: string }, layer?: { id?: string } } | null
      if ((event.type === 'layer.created' || event.type === 'layer.updated') && payload?.layer?.id !== undefined) add(layerIds, event.tenant_id, payload.layer.id)
      else if (event.type.startsWith('object.') && payload?.object?.typeId !== undefined) add(typeIds, event.tenant_id, payload.object.typeId)
    }
    for (const [tenant, ids] of typeIds) for (const layer of await sql.layersForTypes(tx, tenant, [...ids])) add(layerIds, tenant, layer.id)
    for (const [tenant, ids] of layerIds) {
      for (const layerId of ids) await jobs.send(TILES_PRERENDER.name, { tenantId: tenant, layerId }, { db: tx, singletonKey: `${tenant}:${layerId}` })
    }
  }
  return Object.assign((event: ObjectEvent, tx: Queryable = db) => consume([event], tx), { batch: (events: ObjectEvent[], tx: Queryable) => consume(events, tx) })
}
