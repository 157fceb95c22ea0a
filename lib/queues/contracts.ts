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

// Automation (lib/automation). Payloads carry ids only: the run row holds everything else, so a
// retried or duplicated job re-reads the truth and the run's unique trigger key keeps effects once.
const tenantRun = {
  type: 'object',
  additionalProperties: false,
  required: ['tenantId', 'runId'],
  properties: { tenantId: { type: 'string' }, runId: { type: 'string', format: 'uuid' } }
} as const
const tenantRule = {
  type: 'object',
  additionalProperties: false,
  required: ['tenantId', 'ruleId'],
  properties: { tenantId: { type: 'string' }, ruleId: { type: 'string', format: 'uuid' } }
} as const

/** One rule run: match -> condition -> effect. pg-boss retries only infrastructure failures. */
export const AUTOMATION_RUN = {
  name: 'automation.run',
  payload: tenantRun,
  // Short: a run is one short transaction, and a run job that expires while still running is
  // harmless (the retry waits on the run's row lock, then finds it done).
  options: { retryLimit: 5, retryDelay: 1, retryBackoff: true, retryDelayMax: 30, expireInSeconds: 15 }
} as const satisfies QueueContract
export interface AutomationRunPayload { tenantId: string, runId: string }

/**
 * One outgoing webhook attempt. The next attempt is a new job sent with startAfter 1 s, 2 s, 4 s...
 * (docs/behaviour.md "Automation": exact backoff; pg-boss's own backoff is jittered), so pg-boss
 * retries here only cover a worker that died mid-attempt.
 */
export const WEBHOOK_DELIVER = {
  name: 'webhook.deliver',
  payload: {
    type: 'object',
    additionalProperties: false,
    required: ['tenantId', 'runId', 'attempt'],
    properties: { ...tenantRun.properties, attempt: { type: 'integer', minimum: 1 } }
  },
  // Longer than an attempt's 30 s timeout; a re-sent attempt carries the same Idempotency-Key.
  options: { retryLimit: 3, retryDelay: 1, retryBackoff: false, expireInSeconds: 45 }
} as const satisfies QueueContract
export interface WebhookDeliverPayload { tenantId: string, runId: string, attempt: number }

/** A schedule tick of one rule, sent by pg-boss's scheduler (schedule key = rule id). */
export const AUTOMATION_TICK = {
  name: 'automation.tick',
  payload: tenantRule,
  options: { retryLimit: 3, retryDelay: 1, retryBackoff: true, expireInSeconds: 60 }
} as const satisfies QueueContract
export interface AutomationTickPayload { tenantId: string, ruleId: string }

/** Brings a rule's pg-boss schedule in line with the rule (sent on publish, deactivate, delete). */
export const AUTOMATION_SCHEDULE_SYNC = {
  name: 'automation.schedule-sync',
  payload: tenantRule,
  options: { retryLimit: 5, retryDelay: 1, retryBackoff: true, expireInSeconds: 60 }
} as const satisfies QueueContract
export type AutomationScheduleSyncPayload = AutomationTickPayload

// A retention job: no payload, scheduled hourly by the worker, one job per tick for the fleet.
const retention = {
  payload: { type: 'object', additionalProperties: false, properties: {} },
  options: { retryLimit: 2, retryDelay: 60, retryBackoff: false, expireInSeconds: 900 }
} as const

/** Retention: prunes finished runs by age. */
export const AUTOMATION_PRUNE = { name: 'automation.prune', ...retention } as const satisfies QueueContract

/** Retention: deletes outbox events delivered more than OUTBOX_RETENTION_HOURS ago. */
export const OUTBOX_PRUNE = { name: 'outbox.prune', ...retention } as const satisfies QueueContract

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

export const QUEUES: QueueContract[] = [OUTBOX_DISPATCH, OUTBOX_PRUNE, AUTOMATION_RUN, WEBHOOK_DELIVER, AUTOMATION_TICK, AUTOMATION_SCHEDULE_SYNC, AUTOMATION_PRUNE, TILES_PRERENDER]
