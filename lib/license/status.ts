import jwt from 'jsonwebtoken'
import type { Config } from '../config.js'

export type LicenseStatus = 'valid' | 'expiring_soon' | 'expired' | 'invalid'

/**
 * The status of the environment license (CONTRACT "Licensing"): no public key configured means
 * the development edition (valid); a key without a license means expired; a license whose
 * signature does not verify is `invalid` (readiness answers 503).
 */
export function environmentLicenseStatus (license: Config['license'], now = Date.now()): LicenseStatus {
  if (license.publicKey === null) return 'valid'
  if (license.key === null) return 'expired'
  try {
    const claims = jwt.verify(license.key, license.publicKey, { algorithms: ['RS256'], ignoreExpiration: true })
    if (typeof claims === 'string') return 'invalid'
    if (typeof claims.exp !== 'number') return 'valid'
    const left = claims.exp * 1000 - now
    if (left <= 0) return 'expired'
    return left <= license.expiringSoonDays * 86400_000 ? 'expiring_soon' : 'valid'
  } catch {
    return 'invalid'
  }
}
