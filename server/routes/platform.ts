import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import { registry } from '../../lib/metrics.js'
import { STATEMENT_KINDS } from '../../lib/statement-kind.js'
import { readiness } from '../../lib/health/index.js'
import * as access from '../../lib/access/index.js'

const HealthBody = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ok', 'error'] },
    mode: { type: 'string', enum: ['postgres', 'embedded'], description: 'embedded: no DATABASE_URL, PGlite in the one process (trying things out)' },
    note: { type: 'string', description: 'embedded mode only: what it is for and how to move to PostgreSQL' },
    checks: { type: 'object', properties: { database: { type: 'string' }, license: { type: 'string' }, release: { type: 'string' }, shutdown: { type: 'string', enum: ['draining'], description: 'present while the process stops (SIGTERM): it finishes the requests in progress and takes no more' } } }
  }
}

const MeBody = {
  type: 'object',
  required: ['sub', 'tenant', 'roles', 'permissions', 'authDisabled'],
  properties: {
    sub: { type: 'string' },
    tenant: { type: 'string' },
    roles: { type: 'array', items: { type: 'string' } },
    scope: { type: 'string', nullable: true },
    permissions: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
    authDisabled: { type: 'boolean' }
  }
}

export const platformRoutes: RouteModule = (deps) => {
  return [
    route({
      method: 'get', path: '/v1/health/live', operationId: 'healthLive', tag: 'platform', auth: 'none', unlimited: true,
      summary: 'Liveness: 200 while the process runs',
      description: 'Public and not rate-limited. Answers {"status":"ok"} while the process runs; it checks nothing else.',
      responses: { 200: { description: 'alive', schema: { type: 'object', properties: { status: { type: 'string', enum: ['ok'] } } } } },
      example: { summary: 'Alive', status: 200 }
    }, () => ({ body: { status: 'ok' } })),

    route({
      method: 'get', path: '/v1/health/ready', operationId: 'healthReady', tag: 'platform', auth: 'none', unlimited: true,
      summary: 'Readiness: database reachable, license verifiable, database at this release',
      description: 'Public and not rate-limited. 200 when the database answers, the configured license verifies and the database is at this release; 503 with the failing check otherwise, and while the process stops (checks.shutdown: draining). Route traffic only after 200.',
      responses: { 200: { description: 'ready', schema: HealthBody }, 503: { description: 'not ready', schema: HealthBody } },
      example: { summary: 'Ready', status: 200 }
    }, async () => {
      const r = await readiness(deps.db, deps.config, deps.stopping?.() ?? false)
      return { status: r.ready ? 200 : 503, body: r.body }
    }),

    route({
      method: 'get', path: '/metrics', operationId: 'metrics', tag: 'platform', auth: 'metrics', unlimited: true,
      summary: 'Prometheus metrics (Bearer METRICS_TOKEN when configured)',
      description: 'Prometheus text format: HTTP, database, workflow and license counters. Open unless METRICS_TOKEN is set; then Authorization: Bearer <METRICS_TOKEN> is required (401 otherwise). ' +
        `database_query_duration_seconds is labelled by the statement's kind, operation = ${STATEMENT_KINDS.join(' | ')} (after a WITH list, the statement it serves).`,
      responses: { 200: { description: 'text exposition format', contentType: 'text/plain', schema: { type: 'string' } } },
      errors: [401],
      example: { summary: 'The metrics (no METRICS_TOKEN configured)', status: 200 }
    }, async () => ({ bytes: await registry.metrics(), type: registry.contentType })),

    route({
      method: 'get', path: '/openapi/v1.json', operationId: 'openapi', tag: 'platform', auth: 'none',
      summary: 'This REST contract (OpenAPI 3.0)',
      description: 'Public. This document, built from the same route declarations and JSON Schemas that validate requests; its info.version is the release.',
      responses: { 200: { description: 'OpenAPI document', schema: { type: 'object' } } },
      example: { summary: 'This document', status: 200 }
    }, () => ({ body: deps.openapi() })),

    route({
      method: 'get', path: '/v1/auth/me', operationId: 'authMe', tag: 'platform', auth: 'bearer',
      summary: 'The caller: identity, roles and effective permissions',
      description: 'Any valid token may call it, even one without roles. permissions lists, per resource, the actions the caller\'s roles (narrowed by scope) grant.',
      responses: { 200: { description: 'identity', schema: MeBody } },
      example: { summary: 'Who am I', status: 200 }
    }, req => ({ body: access.describeCaller(req.service) })),
  ]
}
