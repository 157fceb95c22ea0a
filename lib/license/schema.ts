import { FEATURES } from './limits.js'

export const InstallLicenseBody = {
  type: 'object',
  additionalProperties: false,
  required: ['licenseKey'],
  properties: {
    licenseKey: { type: 'string', minLength: 1, maxLength: 16384, description: 'An RS256-signed license JWT (what LICENSE_KEY holds)' }
  }
}

const Counts = { type: 'object', additionalProperties: { type: 'integer' } }

export const LicenseBody = {
  type: 'object',
  required: ['status', 'edition', 'features', 'limits', 'usage', 'metadata', 'issuedAt', 'expiresAt', 'source', 'deploymentFingerprint'],
  properties: {
    status: { type: 'string', enum: ['valid', 'expiring_soon', 'expired'], description: 'By time alone: expiring_soon from LICENSE_EXPIRING_SOON_DAYS (default 30) before expiresAt' },
    edition: { type: 'string', example: 'enterprise', description: '`development` without LICENSE_PUBLIC_KEY; `none` when a key is configured but the tenant has no license' },
    features: { type: 'object', properties: Object.fromEntries(FEATURES.map(f => [f, { type: 'boolean' }])), description: 'Module switches; a feature the license does not name is on' },
    limits: { ...Counts, description: 'Ceilings: object_count, workflow_run_count and query_count (per UTC month), relation_count, object_type_count, layer_count, automation_rule_count; other <x>_count keys are reported, not enforced' },
    usage: { type: 'object', additionalProperties: { type: 'integer', nullable: true }, description: 'Current usage per limit code (monthly ones for the current UTC month); null for a limit this service does not count' },
    metadata: { type: 'object' },
    issuedAt: { type: 'string', format: 'date-time', nullable: true },
    expiresAt: { type: 'string', format: 'date-time', nullable: true },
    source: { type: 'string', enum: ['environment', 'installed', 'none'] },
    deploymentFingerprint: { type: 'string', description: 'Stable across restarts; the same in every API and worker process of one deployment (derived from the database)' }
  }
}

export const InstallResultBody = {
  ...LicenseBody,
  required: [...LicenseBody.required, 'storage'],
  properties: {
    ...LicenseBody.properties,
    storage: { type: 'string', enum: ['encrypted', 'memory'], description: '`memory` without LICENSE_STORAGE_SECRET: only this process holds the license, until it restarts' },
    warning: { type: 'string' }
  }
}
