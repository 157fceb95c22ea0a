import { randomUUID } from 'node:crypto'
import type { Job } from 'pg-boss'
import type { Config } from '../../lib/config.js'
import type { ModuleHooks } from '../../lib/context.js'
import type { Db } from '../../lib/db.js'
import type { Logger } from '../../lib/log.js'
import { computePermissions } from '../../lib/access/index.js'
import * as layers from '../../lib/layers/index.js'
import { parse } from '../../lib/validation.js'
import { TILES_PRERENDER, type TilesPrerenderPayload } from '../../lib/queues/index.js'

/**
 * Renders a layer's low zooms into the shared tile cache. Only a Redis cache is shared with the
 * API processes: without one (`cache` null) there is nothing useful to fill, and the job ends.
 */
export async function handleTilesPrerender (deps: { db: Db, log: Logger, config: Readonly<Config>, hooks: ModuleHooks, cache: layers.RenderCache | null }, jobs: Array<Job<TilesPrerenderPayload>>): Promise<void> {
  for (const job of jobs) {
    const data = parse<TilesPrerenderPayload>(TILES_PRERENDER.payload, job.data)
    const log = deps.log.child({ queue: job.name, jobId: job.id })
    if (deps.cache === null) { log.debug('no shared tile cache (REDIS_URL unset): nothing to prerender'); continue }
    const ctx = {
      tenantId: data.tenantId, actor: { sub: 'system:tiles.prerender', roles: ['viewer'] }, scope: null,
      permissions: computePermissions(['viewer'], null), requestId: randomUUID(), log, db: deps.db, config: deps.config, jobs: null, sequencer: null, hooks: deps.hooks
    }
    const n = await layers.prerenderLayer(ctx, deps.cache, data.layerId)
    log.info({ layerId: data.layerId, tiles: n }, 'layer prerendered')
  }
}
