import type { ServiceContext } from '../context.js'
import * as counters from '../counters/index.js'
import { writeHooks } from '../pipeline.js'
import { announce, TenantSettingsCache } from '../settings/index.js'

// The tenant's `object_changes` counter (lib/counters) over the types a selection may hold: the
// version every export's cache key and ETag derive from (README "Caching"). A warm tile must not
// cost a database round trip, so the value is kept per process and tenant until an object write
// of the tenant commits:
// - in the writing process, the write pipeline's after-commit hook drops the tenant's values
//   before the write returns (its caller's next request reads the new counter);
// - every other process (API replicas, the worker) hears it from the NOTIFY the hook sends just
//   after the commit (lib/settings `announce`, kind 'objects'), within milliseconds.
// A value also lives at most MAX_AGE_MS: what a lost announcement (or a write made outside the
// pipeline, by hand) can cost. Without a live settings feed every read goes to the database.

const MAX_AGE_MS = 5000
const cache = new TenantSettingsCache<number>('objects', { maxAgeMs: MAX_AGE_MS, maxEntries: 50_000 })

/** The counter over `types` (null: every type), read BEFORE anything is rendered under it. */
export function changeCount (ctx: ServiceContext, types: string[] | null): Promise<number> {
  return cache.get(ctx.db, ctx.tenantId, () => counters.total(ctx.db, ctx.tenantId, counters.OBJECT_CHANGES, types), types === null ? '*' : types.join(','))
}

writeHooks.afterCommit.push((ctx, _spec, changes) => {
  if (!changes.some(c => c.counts?.some(d => d.counter === counters.OBJECT_CHANGES && d.delta !== 0))) return
  cache.forget(ctx.db, ctx.tenantId)
  announce(ctx.db, 'objects', ctx.tenantId, ctx.log)
})
