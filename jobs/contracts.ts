// Queue names, payload schemas and queue options: the contract between enqueuers and handlers.
// Imports nothing of ours, so lib, server and worker can all depend on it.

export interface QueueContract {
  name: string
  payload: object
  options: { retryLimit: number, retryDelay: number, retryBackoff: boolean, retryDelayMax?: number, expireInSeconds?: number }
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

export const QUEUES: QueueContract[] = [OUTBOX_DISPATCH]
