import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as policy from '../../lib/policy/index.js'
import { readIfMatch } from '../http/preconditions.js'
import { ETagHeader, IfMatchOptional } from '../http/common.js'

const S = policy.schema

export const permissionRoutes: RouteModule = () => {
  return [
    route({
      method: 'get', path: '/v1/permissions/policy', operationId: 'getPermissionPolicy', tag: 'platform', auth: 'bearer',
      summary: 'The tenant permission policy: effective grants of the built-in roles and of every custom role (policy:read)',
      description: 'Needs policy:read. {roles: {role: {resource: [actions]}}, version, updatedAt}: every built-in role with its effective grants (the default unless the policy replaced them) and every custom role. The ETag carries the version, for If-Match on PUT.',
      responses: { 200: { description: 'the policy', schema: S.PolicyBody, headers: ETagHeader } },
      example: { summary: 'The policy', status: 200 }
    }, async req => {
      const p = await policy.getPolicy(req.service)
      return { headers: { ETag: `"${p.version}"` }, body: p }
    }),

    route({
      method: 'put', path: '/v1/permissions/policy', operationId: 'putPermissionPolicy', tag: 'platform', auth: 'bearer',
      summary: 'Replace the tenant permission policy (policy:write); applies at once in every process',
      description: 'Built-in roles not named keep their defaults; a named one gets exactly the grants given (narrowing it). Custom roles start with nothing. ' +
        'owner must keep policy read and write (400). Unknown resources or actions give 400 naming the path. If-Match (optional) must be the current version (409 otherwise).',
      headers: IfMatchOptional, body: S.PutPolicyBody,
      responses: { 200: { description: 'the new policy', schema: S.PolicyBody, headers: ETagHeader } }, errors: [409],
      example: { summary: 'Add a custom role that reads objects and layers', body: { roles: { analyst: { objects: ['read'], layers: ['read'] } } }, status: 200, after: ['getPermissionPolicy'] }
    }, async req => {
      const p = await policy.putPolicy(req.service, req.body, readIfMatch(req))
      return { headers: { ETag: `"${p.version}"` }, body: p }
    }),
  ]
}
