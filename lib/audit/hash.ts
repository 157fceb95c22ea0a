import { createHash } from 'node:crypto'
import canonicalizeModule from 'canonicalize'

// canonicalize ships CJS typings that NodeNext sees as a namespace; the default export is the function.
const canonicalize = canonicalizeModule as unknown as (v: unknown) => string | undefined

export const GENESIS_HASH = '0'.repeat(64)

export interface HashedFields {
  sequence: number
  type: string
  actor: { sub: string, roles: string[] } | null
  resourceType: string | null
  resourceId: string | null
  data: unknown
  occurredAt: string
}

/** CONTRACT: hash = sha256hex(previousHash + RFC 8785 canonical JSON of the hashed fields). */
export function eventHash (previousHash: string, f: HashedFields): string {
  const body = canonicalize({
    sequence: f.sequence,
    type: f.type,
    actor: f.actor,
    resourceType: f.resourceType,
    resourceId: f.resourceId,
    data: f.data,
    occurredAt: f.occurredAt
  })
  return createHash('sha256').update(previousHash + body).digest('hex')
}
