import { RESOURCE_ACTIONS } from '../access/index.js'

// Each resource takes only its own actions (docs/behaviour.md "Authentication and roles": unknown
// actions give 400), so an action the resource lacks fails here naming its path
// (`roles.x.objects[0]`), and the OpenAPI document, made from this schema, shows each resource's
// actions.
const Grants = {
  type: 'object',
  description: 'resource -> actions the role may perform (each resource has its own actions)',
  properties: Object.fromEntries(Object.entries(RESOURCE_ACTIONS).map(([r, actions]) => [r, { type: 'array', items: { type: 'string', enum: [...actions] }, uniqueItems: true }])),
  additionalProperties: false
}

/** PUT /v1/permissions/policy. `version` and `updatedAt` (as GET returns them) are accepted and ignored. */
export const PutPolicyBody = {
  type: 'object',
  additionalProperties: false,
  required: ['roles'],
  properties: {
    roles: {
      type: 'object',
      description: 'role name -> grants. Built-in roles (owner, admin, operator, viewer) not named keep their defaults; a named one gets exactly these grants. Custom roles start with nothing. owner must keep policy read and write. Role names: 1 to 64 of A-Za-z0-9._:-',
      maxProperties: 100,
      additionalProperties: Grants
    },
    version: { type: 'integer' },
    updatedAt: { type: 'string', nullable: true }
  }
}

export const PolicyBody = {
  type: 'object',
  required: ['roles', 'version', 'updatedAt'],
  properties: {
    roles: { type: 'object', additionalProperties: Grants, description: 'Effective grants of every built-in role and of every role the policy defines' },
    version: { type: 'integer', description: '0 until the first PUT; +1 on every PUT' },
    updatedAt: { type: 'string', format: 'date-time', nullable: true }
  }
}
