import jwt from 'jsonwebtoken'
import { Ajv } from 'ajv'
import { validationError } from '../errors.js'

/** What a license JWT carries (docs/behaviour.md "Licensing"); `tenant` binds it to one tenant. */
export interface LicenseClaims {
  edition: string
  features: Record<string, boolean>
  limits: Record<string, number>
  metadata: Record<string, unknown>
  issuedAt: Date | null
  expiresAt: Date | null
  tenant: string | null
}

const ClaimsSchema = {
  type: 'object',
  required: ['edition'],
  properties: {
    edition: { type: 'string', minLength: 1, maxLength: 200 },
    features: { type: 'object', additionalProperties: { type: 'boolean' }, maxProperties: 100 },
    limits: { type: 'object', additionalProperties: { type: 'integer', minimum: 0 }, maxProperties: 100 },
    metadata: { type: 'object', maxProperties: 100 },
    tenant: { type: 'string', minLength: 1, maxLength: 64 },
    iat: { type: 'number' },
    exp: { type: 'number' }
  }
}
const checkClaims = new Ajv({ strict: false, allErrors: false }).compile(ClaimsSchema)

/**
 * Verifies a license JWT: RS256 only, against `publicKey`. The algorithm list is fixed here, so a
 * token naming HS256 (signed with the public key as an HMAC secret), `none` or any other algorithm
 * is refused whatever its header says. Expiry is not an error: an expired license is a status.
 * Throws VALIDATION_ERROR on `licenseKey` with a reason a person can act on.
 */
export function verifyLicense (token: string, publicKey: string): LicenseClaims {
  let payload: jwt.JwtPayload
  try {
    const header = jwt.decode(token, { complete: true })?.header
    if (header?.alg !== 'RS256') throw new Error(`algorithm ${String(header?.alg ?? 'unknown')} is not accepted; licenses are RS256`)
    const verified = jwt.verify(token, publicKey, { algorithms: ['RS256'], ignoreExpiration: true })
    if (typeof verified === 'string') throw new Error('the payload is not a JSON object')
    payload = verified
  } catch (err) {
    throw validationError('licenseKey', `does not verify: ${(err as Error).message}`)
  }
  if (!checkClaims(payload)) {
    const e = checkClaims.errors?.[0]
    throw validationError('licenseKey', `claims are malformed: ${e?.instancePath || '(payload)'} ${e?.message ?? ''}`.trim())
  }
  return {
    edition: payload.edition,
    features: payload.features ?? {},
    limits: payload.limits ?? {},
    metadata: payload.metadata ?? {},
    issuedAt: typeof payload.iat === 'number' ? new Date(payload.iat * 1000) : null,
    expiresAt: typeof payload.exp === 'number' ? new Date(payload.exp * 1000) : null,
    tenant: typeof payload.tenant === 'string' ? payload.tenant : null
  }
}
