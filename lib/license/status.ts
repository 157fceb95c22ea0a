import type { Config } from '../config.js'
import { verifyLicense, type LicenseClaims } from './claims.js'

export type LicenseStatus = 'valid' | 'expiring_soon' | 'expired'

/**
 * By time alone (SPEC 3 "License status"): valid until LICENSE_EXPIRING_SOON_DAYS before
 * `expiresAt`, then expiring_soon, then expired from `expiresAt` on. A license without `exp`
 * never expires. `now` is a parameter, so every change of status is tested with a fixed clock.
 */
export function statusAt (expiresAt: Date | null, now: Date, expiringSoonDays: number): LicenseStatus {
  if (expiresAt === null) return 'valid'
  const left = expiresAt.getTime() - now.getTime()
  if (left <= 0) return 'expired'
  return left <= expiringSoonDays * 86_400_000 ? 'expiring_soon' : 'valid'
}

let memo: { key: string, claims: LicenseClaims | null } | null = null

/** The verified LICENSE_KEY (memoised per configuration), or null when unset or it does not verify. */
export function environmentLicense (license: Config['license']): LicenseClaims | null {
  if (license.publicKey === null || license.key === null) return null
  const key = `${license.publicKey}\u0000${license.key}`
  if (memo?.key !== key) {
    let claims: LicenseClaims | null = null
    try { claims = verifyLicense(license.key, license.publicKey) } catch { /* reported by readiness */ }
    memo = { key, claims }
  }
  return memo.claims
}

/**
 * The environment license as readiness reports it (docs/behaviour.md "Platform"): no public key is the
 * development edition (valid); a key without a license is expired; a LICENSE_KEY that does not
 * verify is `invalid` (readiness answers 503).
 */
export function environmentLicenseStatus (license: Config['license'], now = new Date()): LicenseStatus | 'invalid' {
  if (license.publicKey === null) return 'valid'
  if (license.key === null) return 'expired'
  const claims = environmentLicense(license)
  return claims === null ? 'invalid' : statusAt(claims.expiresAt, now, license.expiringSoonDays)
}
