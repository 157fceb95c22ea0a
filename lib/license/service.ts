import { createHash } from 'node:crypto'
import type { ServiceContext } from '../context.js'
import type { Db } from '../db.js'
import { runStatements, withTransaction } from '../db.js'
import { AppError, validationError } from '../errors.js'
import { parse } from '../validation.js'
import * as access from '../access/index.js'
import * as counters from '../counters/index.js'
import { runWrite } from '../pipeline.js'
import { changedStatement, TenantSettingsCache } from '../settings/index.js'
import { verifyLicense, type LicenseClaims } from './claims.js'
import { environmentLicense, statusAt, type LicenseStatus } from './status.js'
import { FEATURES, LIMITS, type Feature } from './limits.js'
import { seal, unseal } from './seal.js'
import { checkQuota } from './quota.js'
import { bufferQueryRun, flushQueryRuns } from './query-runs.js'
import * as schema from './schema.js'
import * as sql from './sql.js'

export type LicenseSource = 'environment' | 'installed' | 'none'
export interface EffectiveLicense extends LicenseClaims { source: LicenseSource }

const NO_CLAIMS = { features: {}, limits: {}, metadata: {}, issuedAt: null, expiresAt: null, tenant: null }
/** No LICENSE_PUBLIC_KEY: everything on, no limits, never expires. */
const DEVELOPMENT: EffectiveLicense = Object.freeze({ ...NO_CLAIMS, edition: 'development', source: 'none' })
/** A public key but no license for the tenant: reads work, writes give LICENSE_EXPIRED. */
const NONE: EffectiveLicense = Object.freeze({ ...NO_CLAIMS, edition: 'none', source: 'none' })

export function statusOf (license: EffectiveLicense, now: Date, expiringSoonDays: number): LicenseStatus {
  if (license === NONE) return 'expired'
  return statusAt(license.expiresAt, now, expiringSoonDays)
}

// Installed licenses: sealed in tenant_licenses when LICENSE_STORAGE_SECRET is set (every process
// reads them; a change is announced by NOTIFY), else in this process's memory only.
const installedCache = new TenantSettingsCache<LicenseClaims | null>('license')
const memoryStore = new WeakMap<Db, Map<string, LicenseClaims>>()

async function loadInstalled (ctx: ServiceContext): Promise<LicenseClaims | null> {
  const { storageSecret, publicKey } = ctx.config.license
  if (storageSecret === null || publicKey === null) return memoryStore.get(ctx.db)?.get(ctx.tenantId) ?? null
  return installedCache.get(ctx.db, ctx.tenantId, async () => {
    const row = await sql.findSealed(ctx.db, ctx.tenantId)
    const token = row === null ? null : unseal(storageSecret, ctx.tenantId, row.sealed)
    if (row !== null && token === null) ctx.log.warn({ tenant: ctx.tenantId }, 'an installed license does not open with LICENSE_STORAGE_SECRET; ignored')
    if (token === null) return null
    try { return verifyLicense(token, publicKey) } catch { return null }
  })
}

/** The tenant's license: installed, else LICENSE_KEY, else none (or development without a public key). */
export async function effectiveLicense (ctx: ServiceContext): Promise<EffectiveLicense> {
  if (ctx.config.license.publicKey === null) return DEVELOPMENT
  const installed = await loadInstalled(ctx)
  if (installed !== null) return { ...installed, source: 'installed' }
  const env = environmentLicense(ctx.config.license)
  return env === null ? NONE : { ...env, source: 'environment' }
}

/** LICENSE_EXPIRED for every write of an expired tenant; installing a license stays possible. */
export async function assertWritable (ctx: ServiceContext, now = new Date()): Promise<EffectiveLicense> {
  const license = await effectiveLicense(ctx)
  if (license !== DEVELOPMENT && statusOf(license, now, ctx.config.license.expiringSoonDays) === 'expired') {
    throw new AppError('LICENSE_EXPIRED', license === NONE
      ? 'this tenant has no license; reads keep working, writes need one (POST /v1/license)'
      : `the license expired at ${license.expiresAt?.toISOString()}; reads keep working, writes need a new license (POST /v1/license)`,
    { expiresAt: license.expiresAt?.toISOString() ?? null })
  }
  return license
}

/** FEATURE_DISABLED when the tenant's license switches the module off. */
export async function assertFeature (ctx: ServiceContext, feature: Feature): Promise<void> {
  if (ctx.config.license.publicKey === null) return
  const license = await effectiveLicense(ctx)
  if (license.features[feature] === false) {
    throw new AppError('FEATURE_DISABLED', `the ${feature} module is not part of this tenant's license (${license.edition})`, { feature })
  }
}

/** The limit set for `limitCode` by the tenant's license, or null. */
export function limitOf (license: EffectiveLicense, limitCode: string): number | null {
  return Object.hasOwn(license.limits, limitCode) ? license.limits[limitCode] : null
}

/** A delta for a monthly limit of the current month, or null for a live-record limit. */
export function monthlyDelta (limitCode: string, now: Date): counters.CounterDelta | null {
  const def = LIMITS[limitCode]
  return def?.monthly === true ? { counter: def.counter, bucket: counters.monthBucket(now), delta: 1 } : null
}

export { checkQuota }

/**
 * A query run (POST /v1/queries/objects/run): counted against query_count of the current month,
 * refused at the limit; allowed while expired (a read).
 */
export async function countQueryRun (ctx: ServiceContext, now = new Date()): Promise<void> {
  const delta = monthlyDelta('query_count', now) as counters.CounterDelta
  const limit = limitOf(await effectiveLicense(ctx), 'query_count')
  if (limit === null) return bufferQueryRun(ctx.db, ctx.tenantId, delta.bucket ?? '')
  await flushQueryRuns(ctx.db)
  const add = counters.addStatement(ctx.tenantId, [delta])!
  await withTransaction(ctx.db, async tx => {
    await runStatements(tx, [add])
    await checkQuota(ctx, tx, 'query_count', limit, 1, delta.bucket ?? null)
  })
}

let fingerprint: { db: Db, value: Promise<string> } | null = null

/** A hash of the database cluster's system identifier and the database name (README). */
export function deploymentFingerprint (db: Db): Promise<string> {
  if (fingerprint?.db !== db) {
    const value = sql.deploymentIdentity(db).then(id => createHash('sha256').update(`spatial-platform:${id}`).digest('hex').slice(0, 32))
    value.catch(() => { fingerprint = null })
    fingerprint = { db, value }
  }
  return fingerprint.value
}

export interface LicenseDto {
  status: LicenseStatus
  edition: string
  features: Record<string, boolean>
  limits: Record<string, number>
  usage: Record<string, number | null>
  metadata: Record<string, unknown>
  issuedAt: string | null
  expiresAt: string | null
  source: LicenseSource
  deploymentFingerprint: string
}

async function usageOf (ctx: ServiceContext, license: EffectiveLicense, now: Date): Promise<Record<string, number | null>> {
  const codes = Object.keys(LIMITS)
  const live = codes.filter(c => !LIMITS[c].monthly).map(c => LIMITS[c].counter)
  const monthly = codes.filter(c => LIMITS[c].monthly).map(c => LIMITS[c].counter)
  await flushQueryRuns(ctx.db)
  const totals = await sql.usage(ctx.db, ctx.tenantId, live, monthly, counters.monthBucket(now))
  const out: Record<string, number | null> = {}
  for (const c of codes) out[c] = totals.get(LIMITS[c].counter) ?? 0
  for (const c of Object.keys(license.limits)) if (!(c in out)) out[c] = null // reported, not enforced
  return out
}

/** GET /v1/license: status by `now`, entitlements, usage of every counted limit. */
export async function getLicense (ctx: ServiceContext, now = new Date()): Promise<LicenseDto> {
  await access.authorize(ctx, 'license', 'read')
  const license = await effectiveLicense(ctx)
  const [usage, fp] = await Promise.all([usageOf(ctx, license, now), deploymentFingerprint(ctx.db)])
  return {
    status: statusOf(license, now, ctx.config.license.expiringSoonDays),
    edition: license.edition,
    features: Object.fromEntries(FEATURES.map(f => [f, license.features[f] !== false])),
    limits: { ...license.limits },
    usage,
    metadata: license.metadata,
    issuedAt: license.issuedAt?.toISOString() ?? null,
    expiresAt: license.expiresAt?.toISOString() ?? null,
    source: license.source,
    deploymentFingerprint: fp
  }
}

export type InstallResult = LicenseDto & { storage: 'encrypted' | 'memory', warning?: string }

const MEMORY_WARNING = 'LICENSE_STORAGE_SECRET is not set: the license lives in this process\'s memory only; other API and worker processes do not see it and a restart loses it'

/**
 * POST /v1/license: verifies, then switches the tenant at once. Stored sealed when
 * LICENSE_STORAGE_SECRET is set (and announced to every process), else kept in memory (the
 * answer and the log say so). A license that does not verify, or names another tenant, is a 400
 * that changes nothing.
 */
export async function installLicense (ctx: ServiceContext, body: unknown): Promise<InstallResult> {
  await access.authorize(ctx, 'license', 'write') // before verifying: a caller without the right learns nothing
  const { licenseKey } = parse<{ licenseKey: string }>(schema.InstallLicenseBody, body)
  const { publicKey, storageSecret } = ctx.config.license
  if (publicKey === null) throw validationError('licenseKey', 'this deployment has no LICENSE_PUBLIC_KEY, so it cannot verify a license (it runs the development edition)')
  const claims = verifyLicense(licenseKey, publicKey)
  if (claims.tenant !== null && claims.tenant !== ctx.tenantId) throw validationError('licenseKey', `is issued for tenant "${claims.tenant}", not "${ctx.tenantId}"`)
  const storage = storageSecret === null ? 'memory' : 'encrypted'
  await runWrite(ctx, { resource: 'license', action: 'write' }, async w => {
    if (storageSecret !== null) {
      await sql.upsertSealed(w.tx, ctx.tenantId, seal(storageSecret, ctx.tenantId, licenseKey), ctx.actor.sub)
      await runStatements(w.tx, [changedStatement('license', ctx.tenantId)])
    }
    w.record({ audit: { type: 'license.installed', resourceType: 'license', resourceId: ctx.tenantId, data: { edition: claims.edition, expiresAt: claims.expiresAt?.toISOString() ?? null, storage } } })
  })
  if (storageSecret !== null) installedCache.forget(ctx.db, ctx.tenantId)
  else {
    let store = memoryStore.get(ctx.db)
    if (store === undefined) { store = new Map(); memoryStore.set(ctx.db, store) }
    store.set(ctx.tenantId, claims)
    ctx.log.warn({ tenant: ctx.tenantId }, MEMORY_WARNING)
  }
  const dto = await getLicense(ctx)
  return storage === 'memory' ? { ...dto, storage, warning: MEMORY_WARNING } : { ...dto, storage }
}
