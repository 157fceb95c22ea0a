// Licensing (SPEC 2 "License", 3 "License status", docs/behaviour.md "Licensing"): README.
export * as schema from './schema.js'
export { verifyLicense, type LicenseClaims } from './claims.js'
export { statusAt, environmentLicense, environmentLicenseStatus, type LicenseStatus } from './status.js'
export { LIMITS, FEATURES, type Feature, type LimitDef } from './limits.js'
export { seal, unseal } from './seal.js'
export {
  effectiveLicense, statusOf, assertWritable, assertFeature, limitOf, checkQuota, countQueryRun,
  getLicense, installLicense, deploymentFingerprint, type EffectiveLicense, type LicenseDto, type InstallResult
} from './service.js'
export { writeHooks } from './hooks.js'
// Query runs are counted in batches; a caller that reads the counters (a test, a status) flushes first.
export { flushQueryRuns } from './query-runs.js'
