import type { Db } from '../db.js'
import type { JobSender } from '../context.js'
import type { OutboxRow } from '../outbox/sql.js'
import { TILES_PRERENDER } from '../../jobs/contracts.js'
import * as sql from './sql.js'

type Event = Pick<OutboxRow, 'tenant_id' | 'type' | 'payload'>

/**
 * Outbox consumer (run by the worker, which owns the queues): an object event queues a
 * tiles.prerender for every layer of the tenant that may select objects of the event's type (its
 * typeId, or no typeId filter); a layer created or updated queues its own. One job per layer at
 * a time (the queue's `stately` policy on singletonKey tenant:layer), however many edits come.
 * A claim of many events costs one layer lookup per tenant and one send per distinct layer.
 */
export function prerenderOnObjectEvents (db: Db, jobs: JobSender): ((event: Event) => Promise<void>) & { batch: (events: Event[]) => Promise<void> } {
  const consume = async (events: Event[]): Promise<void> => {
    const byTenant = new Map<string, { layers: Set<string>, types: Set<string> }>()
    for (const event of events) {
      let t = byTenant.get(event.tenant_id)
      if (t === undefined) byTenant.set(event.tenant_id, t = { layers: new Set(), types: new Set() })
      const payload = event.payload as { object?: { typeId?: string }, layer?: { id?: string } } | null
      if ((event.type === 'layer.created' || event.type === 'layer.updated') && payload?.layer?.id !== undefined) t.layers.add(payload.layer.id)
      else if (event.type.startsWith('object.') && payload?.object?.typeId !== undefined) t.types.add(payload.object.typeId)
    }
    for (const [tenantId, t] of byTenant) {
      if (t.types.size > 0) for (const layer of await sql.layersForTypes(db, tenantId, [...t.types])) t.layers.add(layer.id)
      for (const layerId of t.layers) await jobs.send(TILES_PRERENDER.name, { tenantId, layerId }, { db, singletonKey: `${tenantId}:${layerId}` })
    }
  }
  const one = async (event: Event): Promise<void> => consume([event])
  return Object.assign(one, { batch: consume })
}
