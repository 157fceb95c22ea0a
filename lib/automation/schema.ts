import { PagingQuery, Timestamp, Uuid, envelope } from '../schemas.js'

// Request and response schemas of /v1/automation (docs/behaviour.md "Automation"). The per-kind rules
// (which fields a trigger or effect of a given type needs) are checked in definition.ts, so that
// a 400 names one exact path instead of a oneOf branch.

export const TRIGGER_TYPES = ['webhook', 'object.event', 'schedule'] as const
export const TRIGGER_EVENTS = ['object.created', 'object.updated', 'object.deleted', 'object.transitioned', 'automation.run.failed'] as const
export const EFFECT_TYPES = ['workflow.transition', 'object.update', 'webhook'] as const
export const MATCH_OPERATORS = ['equals', 'notEquals', 'in', 'contains', 'exists', 'greaterThan', 'lessThan'] as const
export const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'skipped', 'dry_run'] as const
export const SLUG_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$'

const Trigger = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  description: '{type:"webhook", slug} | {type:"object.event", events, typeId?} | {type:"schedule", cron, timezone?}',
  properties: {
    type: { type: 'string', enum: [...TRIGGER_TYPES] },
    slug: { type: 'string', pattern: SLUG_PATTERN, description: 'webhook: the {slug} of POST /v1/automation/triggers/{slug}; unique per tenant' },
    events: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', enum: [...TRIGGER_EVENTS] } },
    typeId: { ...Uuid, description: 'object.event: only objects of this type (a type of this tenant, not deleted, else 400 on trigger.typeId)' },
    cron: { type: 'string', minLength: 9, maxLength: 200, description: 'schedule: 5 fields (minute hour day month weekday); a schedule fires at most once a minute, so a 6-field cron with seconds is refused (400)', example: '*/5 * * * *' },
    timezone: { type: 'string', minLength: 1, maxLength: 64, description: 'schedule: IANA zone, default UTC', example: 'Europe/Berlin' }
  }
} as const

const MatchItem = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'path', 'operator'],
  properties: {
    type: { type: 'string', enum: ['attribute'] },
    path: { type: 'string', minLength: 1, maxLength: 500, description: 'JSON path into the payload: $.a.b, $.items[0].id', example: '$.status' },
    operator: { type: 'string', enum: [...MATCH_OPERATORS] },
    value: { description: 'Compared value (not used by exists; an array for in)' }
  }
} as const

const Match = {
  description: 'One match object or an array of them (all must hold)',
  anyOf: [MatchItem, { type: 'array', minItems: 1, maxItems: 50, items: MatchItem }]
} as const

const Retry = {
  type: 'object',
  additionalProperties: false,
  properties: {
    maxAttempts: { type: 'integer', minimum: 1, maximum: 10, default: 3, description: 'Every call counts, the first included' },
    backoff: { type: 'string', enum: ['exponential'], default: 'exponential', description: '1 s, 2 s, 4 s... between attempts' }
  }
} as const

const Effect = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  description: '{type:"workflow.transition", targetState, objectId?} | {type:"object.update", objectId?, attributes} | {type:"webhook", url, method?, headers?, body?, retry?}',
  properties: {
    type: { type: 'string', enum: [...EFFECT_TYPES] },
    targetState: { type: 'string', minLength: 1, maxLength: 200 },
    objectId: { type: 'string', minLength: 1, maxLength: 500, description: 'A template; default the triggering object', example: '{{payload.objectId}}' },
    attributes: { type: 'object', description: 'object.update: a JSON merge patch; string values may hold templates' },
    url: { type: 'string', minLength: 1, maxLength: 2000 },
    method: { type: 'string', enum: ['POST', 'PUT', 'PATCH', 'DELETE', 'GET'], default: 'POST' },
    headers: { type: 'object', additionalProperties: { type: 'string', maxLength: 4000 }, maxProperties: 50 },
    body: { type: 'object', description: 'Sent as JSON; string values may hold templates' },
    retry: Retry
  }
} as const

const ruleFields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  description: { type: 'string', maxLength: 2000 },
  trigger: Trigger,
  match: Match,
  condition: { description: 'JsonLogic over the payload, with the geo operations of lib/automation/README.md', example: { '==': [{ var: 'status' }, 'ok'] } },
  effect: Effect
} as const

export const CreateRuleBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'trigger', 'effect'],
  properties: ruleFields
} as const

/**
 * A trigger or effect in a PATCH: any of its fields (none required, no defaults filled in), each
 * may be null to remove it; merged into the current one by lib/automation/rules.ts `mergePart`.
 */
function partOf<S extends { properties: Record<string, object>, description: string }> (s: S, what: string) {
  const properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => {
    const { default: _filled, ...rest } = v as { default?: unknown }
    return [k, k === 'type' ? rest : { ...rest, nullable: true }]
  }))
  return {
    type: 'object',
    additionalProperties: false,
    description: `The fields to change of the ${what}: each replaces the field of that name, null removes it, the others are kept; a different type replaces the whole ${what}. ${s.description}`,
    properties
  } as const
}

export const PatchRuleBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  description: 'Fields to change (the others are kept); null removes description, match or condition. trigger and effect are merged one level deep (see each).',
  properties: {
    ...ruleFields,
    description: { ...ruleFields.description, nullable: true },
    match: { ...Match, anyOf: [...Match.anyOf, { type: 'object', nullable: true, enum: [null] }] },
    trigger: partOf(Trigger, 'trigger'),
    effect: partOf({ ...Effect, description: 'Fields by effect type as on create.' }, 'effect')
  }
} as const

export const PublishRuleBody = {
  type: 'object',
  additionalProperties: false,
  properties: { to: { type: 'string', enum: ['sandbox', 'active'], default: 'active' } }
} as const

export const RuleBody = {
  type: 'object',
  required: ['id', 'name', 'status', 'version', 'trigger', 'effect', 'createdAt', 'updatedAt'],
  properties: {
    id: Uuid,
    ...ruleFields,
    description: { type: 'string', nullable: true },
    status: { type: 'string', enum: ['draft', 'sandbox', 'active'], description: 'What runs: draft never; sandbox records dry runs; active applies effects' },
    version: { type: 'integer', description: 'The latest version (shown here)' },
    liveVersion: { type: 'integer', nullable: true, description: 'The version that runs (null while draft)' },
    webhookToken: { type: 'string', description: 'Shown once: on create, on rotate-token, or when a PATCH first adds a webhook trigger' },
    signingSecret: { type: 'string', description: 'Shown once, like webhookToken, for rules with a webhook effect' },
    createdAt: Timestamp,
    updatedAt: Timestamp
  }
} as const

export const RuleList = envelope(RuleBody)

export const ListRulesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { ...PagingQuery, status: { type: 'string', enum: ['draft', 'sandbox', 'active'] } }
} as const

export const RotateTokenBody = {
  type: 'object',
  required: ['id'],
  properties: { id: Uuid, webhookToken: { type: 'string' }, signingSecret: { type: 'string' } }
} as const

const Step = {
  type: 'object',
  properties: { phase: { type: 'string', enum: ['match', 'condition', 'effect'] }, ok: { type: 'boolean' }, detail: {}, durationMs: { type: 'number' } }
} as const

export const RunBody = {
  type: 'object',
  required: ['id', 'ruleId', 'ruleVersion', 'status', 'trigger', 'matched', 'conditionResult', 'attempts', 'startedAt', 'finishedAt', 'durationMs', 'error'],
  properties: {
    id: Uuid,
    ruleId: Uuid,
    ruleVersion: { type: 'integer' },
    status: { type: 'string', enum: [...RUN_STATUSES] },
    trigger: { type: 'object', description: '{type, eventId?|scheduledAt?|requestId?, replayOf?}' },
    matched: { type: 'boolean', nullable: true },
    conditionResult: { type: 'boolean', nullable: true },
    attempts: { type: 'integer', description: 'Outgoing webhook calls made' },
    queuedAt: Timestamp,
    startedAt: { ...Timestamp, nullable: true },
    finishedAt: { ...Timestamp, nullable: true },
    durationMs: { type: 'integer', nullable: true },
    error: { type: 'object', nullable: true, description: '{code, message}' },
    replayOf: { ...Uuid, nullable: true }
  }
} as const

export const RunDetailBody = {
  type: 'object',
  required: [...RunBody.required, 'input', 'steps', 'request', 'response', 'attemptLog'],
  properties: {
    ...RunBody.properties,
    input: { description: 'The payload match and condition saw' },
    steps: { type: 'array', items: Step },
    request: { type: 'object', nullable: true, description: 'The outgoing request, secrets redacted' },
    response: { type: 'object', nullable: true, description: '{status, headers, body (cut at 64 KiB)}' },
    attemptLog: { type: 'array', items: { type: 'object' } }
  }
} as const

export const RunList = envelope(RunBody)

export const ListRunsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...PagingQuery,
    status: { type: 'string', enum: [...RUN_STATUSES] },
    from: { ...Timestamp, description: 'Runs queued at or after' },
    to: { ...Timestamp, description: 'Runs queued before' }
  }
} as const

export const IngressBody = { type: 'object', description: 'Any JSON object; passed to the rule as its payload' } as const

export const IngressAccepted = {
  type: 'object',
  required: ['accepted', 'runIds'],
  properties: { accepted: { type: 'boolean' }, runIds: { type: 'array', items: Uuid } }
} as const

export const FlushBody = {
  type: 'object',
  required: ['delivered', 'failed', 'pending'],
  properties: { delivered: { type: 'integer' }, failed: { type: 'integer' }, pending: { type: 'integer' } }
} as const
