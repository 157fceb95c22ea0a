import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

// An installed license at rest: AES-256-GCM under a key derived by HKDF-SHA256 from
// LICENSE_STORAGE_SECRET with a fresh random salt, and a fresh 96-bit nonce, on every write. The
// tenant id is the additional authenticated data, so a sealed row copied to another tenant does
// not open. Format: v1.<salt>.<nonce>.<tag>.<ciphertext>, each base64url.

const INFO = Buffer.from('spatial-platform license storage v1')

function keyFor (secret: string, salt: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), salt, INFO, 32))
}

export function seal (secret: string, tenantId: string, plaintext: string): string {
  const salt = randomBytes(16)
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret, salt), nonce)
  cipher.setAAD(Buffer.from(tenantId, 'utf8'))
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return ['v1', salt, nonce, cipher.getAuthTag(), ct].map(p => typeof p === 'string' ? p : p.toString('base64url')).join('.')
}

/** The plaintext, or null when the secret, the tenant or the bytes do not match. */
export function unseal (secret: string, tenantId: string, sealed: string): string | null {
  const [v, salt, nonce, tag, ct] = sealed.split('.')
  if (v !== 'v1' || ct === undefined) return null
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyFor(secret, Buffer.from(salt, 'base64url')), Buffer.from(nonce, 'base64url'))
    decipher.setAAD(Buffer.from(tenantId, 'utf8'))
    decipher.setAuthTag(Buffer.from(tag, 'base64url'))
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8')
  } catch {
    return null
  }
}
