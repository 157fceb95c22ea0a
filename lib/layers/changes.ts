import type { ServiceContext } from '../context.js'
import * as counters from '../counters/index.js'
import { TenantSettingsCache } from '../settings/index.js'

// The tenant's `object_changes` counter (lib/counters) over the types a selection may hold: the
// version every export's cache key and ETag derive from (README "Caching"). A warm tile must not
// cost a database round trip, so the value is kept per process and tenant until a write of the
// tenant commits domain events (every object write does): lib/outbox announces them to this
// process at once and to the others within milliseconds (`announceCommitted`), which drops the
// tenant's values. A value also lives at most MAX_AGE_MS: what a lost announcement (or a write
// made outside the pipeline, by hand) can cost. Without a live feed every read goes to the database.

const MAX_AGE_MS = 5000
const cache = new TenantSettingsCache<number>('outbox', { maxAgeMs: MAX_AGE_MS, maxEntries: 50_000 })

/** The counter over `types` (null: every type), read BEFORE anything is rendered under it. */
export function changeCount (ctx: ServiceContext, types: string[] | null): Promise<number> {
  return cache.get(ctx.db, ctx.tenantId, () => counters.total(ctx.db, ctx.tenantId, counters.OBJECT_CHANGES, types), types === null ? '*' : types.join(','))
}
