import { PagingQuery, Timestamp, Uuid, envelope } from '../schemas.js'
import * as rules from '../rules/index.js'

export const WORKFLOW_KEY_PATTERN = '^[a-z][a-z0-9_-]{0,62}$'
export const GUARD_TYPES = ['permission', 'jsonlogic', 'spatial', 'rule'] as const

const StateName = { type: 'string', minLength: 1, maxLength: 100, description: 'A state name ("*" is reserved)' } as const

const State = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: StateName,
    final: { type: 'boolean', description: 'A final state has no outgoing transitions' }
  }
} as const

// One flat guard schema (JSON Schema and OpenAPI 3.0 agree on it); which fields belong to which
// `type` is checked in definition.ts so that a fault names its exact path.
export const Guard = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  description: 'permission: {requiredRole}; jsonlogic: {rule, message?}; spatial: {operator, geometry, distanceMeters?, message?}; rule: {ruleId} (its published version)',
  properties: {
    type: { type: 'string', enum: [...GUARD_TYPES] },
    requiredRole: { type: 'string', minLength: 1, maxLength: 64, description: 'permission: passes when the caller holds this role or a built-in role above it (owner > admin > operator > viewer)' },
    ...rules.schema.logicFields,
    ...rules.schema.spatialFields,
    ruleId: { ...Uuid, description: 'rule: a reusable rule of this tenant; its published version is evaluated' }
  }
} as const

const Transition = {
  type: 'object',
  additionalProperties: false,
  required: ['from', 'targetState'],
  properties: {
    from: {
      description: 'Source states, or "*" for every non-final state other than the target',
      oneOf: [
        { type: 'string', enum: ['*'] },
        { type: 'array', items: StateName, minItems: 1, maxItems: 100, uniqueItems: true }
      ]
    },
    targetState: StateName,
    guards: { type: 'array', items: Guard, maxItems: 20, description: 'All must pass; default none' }
  }
} as const

const definitionFields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  initialState: { ...StateName, description: 'The state a new object of a type using this workflow starts in' },
  states: { type: 'array', items: State, minItems: 1, maxItems: 100 },
  transitions: { type: 'array', items: Transition, maxItems: 500 }
} as const

export const CreateWorkflowBody = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'name', 'initialState', 'states'],
  properties: { key: { type: 'string', pattern: WORKFLOW_KEY_PATTERN, description: 'Unique per tenant' }, ...definitionFields }
} as const

export const PatchWorkflowBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  description: 'Fields replace those of the latest version; the result is validated as a whole and becomes version N+1 at once',
  properties: definitionFields
} as const

export const WorkflowBody = {
  type: 'object',
  required: ['id', 'key', 'name', 'initialState', 'states', 'transitions', 'version', 'createdAt', 'updatedAt'],
  properties: {
    id: Uuid,
    key: { type: 'string' },
    ...definitionFields,
    version: { type: 'integer', description: 'The latest version, which objects follow' },
    createdAt: Timestamp,
    updatedAt: Timestamp
  }
} as const

export const WorkflowList = envelope(WorkflowBody)

export const ListWorkflowsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { ...PagingQuery, key: { type: 'string' } }
} as const

export const TransitionBody = {
  type: 'object',
  additionalProperties: false,
  required: ['targetState'],
  properties: {
    targetState: StateName,
    comment: { type: 'string', maxLength: 2000, description: 'Recorded in the audit event' }
  }
} as const

export const GuardResult = {
  type: 'object',
  required: ['type', 'evaluated', 'reason'],
  properties: {
    type: { type: 'string', enum: [...GUARD_TYPES] },
    requiredRole: { type: 'string', description: 'permission guards' },
    operator: { type: 'string', description: 'spatial guards' },
    ruleId: { ...Uuid, description: 'rule guards' },
    evaluated: { type: 'boolean', description: "The guard's outcome: true passes. A guard that cannot be evaluated fails closed" },
    reason: { type: 'string', description: 'Why, in words', example: 'requires role operator; you have viewer' }
  }
} as const

export const ExplainBody = {
  type: 'object',
  required: ['objectId', 'currentState', 'workflowId', 'workflowVersion', 'availableTransitions'],
  properties: {
    objectId: Uuid,
    currentState: { type: 'string', nullable: true, description: 'null when the object type has no workflow' },
    workflowId: { ...Uuid, nullable: true },
    workflowVersion: { type: 'integer', nullable: true },
    availableTransitions: {
      type: 'array',
      description: 'Every transition from the current state, allowed or not',
      items: {
        type: 'object',
        required: ['targetState', 'allowed', 'guards'],
        properties: {
          targetState: { type: 'string' },
          allowed: { type: 'boolean', description: 'The caller could make this transition now: every guard passes and the caller holds objects:transition (false without it, whatever the guards)' },
          guards: { type: 'array', items: GuardResult }
        }
      }
    }
  }
} as const
