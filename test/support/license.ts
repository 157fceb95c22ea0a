import { generateKeyPairSync } from 'node:crypto'
import jwt from 'jsonwebtoken'

/** A development RSA key pair and license signing for tests (no network, no files). */
export interface Issuer { publicKey: string, privateKey: string, sign: (claims: Record<string, unknown>, opts?: jwt.SignOptions) => string }

export function newIssuer (): Issuer {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' }
  })
  return {
    publicKey,
    privateKey,
    sign: (claims, opts = {}) => jwt.sign({ edition: 'test', features: {}, limits: {}, metadata: {}, ...claims }, privateKey, { algorithm: 'RS256', ...opts })
  }
}

export const inDays = (days: number, from = Date.now()): number => Math.floor(from / 1000 + days * 86400)
