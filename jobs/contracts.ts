// Queue names, payload schemas and queue options: the contract between enqueuers and handlers.
// Imports nothing of ours, so lib, server and worker can all depend on it.

export interface QueueContract {
  name: string
  payload: object
  options: { retryLimit: number, retryDelay: number, retryBackoff: boolean, retryDelayMax?: number, expireInSeconds?: number, policy?: 'standard' | 'stately' }
}

export const OUTBOX_DISPATCH = {
  name: 'outbox.dispatch',
  payload: {
    type: 'object',
    additionalProperties: false,
    properties: { tenantId: { type: 'string' } }
  },
  options: { retryLimit: 5, retryDelay: 1, retryBackoff: true, retryDelayMax: 60, expireInSeconds: 300 }
} as const satisfies QueueContract

export interface OutboxDispatchPayload { tenantId?: string }

/** Renders a layer's low zooms into the shared tile cache after it changed (coalesced per layer). */
export const TILES_PRERENDER = {
  name: 'tiles.prerender',
  payload: {
    type: 'object',
    additionalProperties: false,
    required: ['tenantId', 'layerId'],
    properties: { tenantId: { type: 'string' }, layerId: { type: 'string', format: 'uuid' } }
  },
  // stately: at most one queued and one running job per singletonKey (tenant:layer), so a burst
  // of edits renders once more after the current render, not once per edit.
  options: { retryLimit: 2, retryDelay: 5, retryBackoff: true, retryDelayMax: 60, expireInSeconds: 300, policy: 'stately' }
} as const satisfies QueueContract

export interface TilesPrerenderPayload { tenantId: string, layerId: string }

export const QUEUES: QueueContract[] = [OUTBOX_DISPATCH, TILES_PRERENDER]
