import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

// Webhook tokens name their tenant and rule, so the ingress finds the one row to compare with
// (docs/behaviour.md "Automation": the token identifies tenant and rule): <base64url(tenant)>.<rule id>.<secret>.
// Only a SHA-256 of the whole token is stored; the secret part has 256 random bits, so a fast
// hash is enough. Signing secrets must be usable for HMAC, so they are stored as issued.

export function issueWebhookToken (tenantId: string, ruleId: string): { token: string, hash: string } {
  const token = `${Buffer.from(tenantId).toString('base64url')}.${ruleId}.${randomBytes(32).toString('base64url')}`
  return { token, hash: hashToken(token) }
}

export function issueSigningSecret (): string {
  return `whsec_${randomBytes(32).toString('hex')}`
}

export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** The tenant and rule a token claims, or null when it is not of our form. */
export function readWebhookToken (token: string): { tenantId: string, ruleId: string } | null {
  const parts = token.split('.')
  if (parts.length !== 3) return null
  const tenantId = Buffer.from(parts[0], 'base64url').toString()
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(tenantId) || !/^[0-9a-f-]{36}$/i.test(parts[1])) return null
  return { tenantId, ruleId: parts[1].toLowerCase() }
}

/** Constant-time comparison of a presented token with the stored hash. */
export function tokenMatches (token: string, storedHash: string | null): boolean {
  if (storedHash === null) return false
  const a = Buffer.from(hashToken(token), 'hex')
  const b = Buffer.from(storedHash, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

/** `sha256=<hex HMAC-SHA256 of the exact body bytes>` (docs/behaviour.md "Automation"). */
export function signBody (secret: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
}
