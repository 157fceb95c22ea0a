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

/** docs/behaviour.md "Audit": hash = sha256hex(previousHash + RFC 8785 canonical JSON of the hashed fields). */
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

/** A stored event row, as far as the hash covers it. */
export interface StoredEventFields {
  type: string
  actor: { sub: string, roles: string[] } | null
  resource_type: string | null
  resource_id: string | null
  data: unknown
  occurred_at: Date
}

/** The hashed fields of a stored row at `sequence`: one mapping for the sequencer and the prover. */
export function hashedFields (r: StoredEventFields, sequence: number): HashedFields {
  return {
    sequence,
    type: r.type,
    actor: r.actor,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    data: r.data,
    occurredAt: r.occurred_at.toISOString()
  }
}
