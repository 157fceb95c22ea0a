import { PagingQuery, Timestamp, Uuid, envelope } from '../schemas.js'
import { TENANT_RE } from '../access/index.js'

const Hash = { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256, lowercase hex' } as const

const ChainTenant = {
  type: 'string',
  pattern: TENANT_RE.source,
  description: 'The chain to read: your own tenant (the default) or `_system`, which holds authentication failures whose ' +
    'token signature did not verify and is readable only with the `system_admin` role. Any other tenant gives 403.'
} as const

export const AuditEvent = {
  type: 'object',
  required: ['id', 'sequence', 'type', 'actor', 'resourceType', 'resourceId', 'data', 'occurredAt', 'previousHash', 'hash'],
  properties: {
    id: Uuid,
    sequence: { type: 'integer', minimum: 1, description: 'Position in the tenant\'s chain, from 1, without gaps' },
    type: { type: 'string', example: 'object.created', description: 'e.g. auth.failed, permission.denied, license.limit_exceeded, object.created|updated|deleted, workflow.transitioned, automation.executed, policy.updated, license.installed' },
    actor: {
      type: 'object',
      nullable: true,
      description: 'Who acted; null when nobody was authenticated (auth.failed)',
      required: ['sub', 'roles'],
      properties: { sub: { type: 'string' }, roles: { type: 'array', items: { type: 'string' } } }
    },
    resourceType: { type: 'string', nullable: true },
    resourceId: { type: 'string', nullable: true },
    data: { description: 'Event details (a JSON object for the built-in types); the shape depends on the type' },
    occurredAt: Timestamp,
    previousHash: { ...Hash, description: 'hash of the event at sequence - 1; 64 zeros for sequence 1' },
    hash: { ...Hash, description: 'sha256hex(previousHash + RFC 8785 canonical JSON of {sequence, type, actor, resourceType, resourceId, data, occurredAt})' }
  }
} as const

export const AuditEventList = envelope(AuditEvent)

export const ListAuditEventsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...PagingQuery,
    type: { type: 'string', minLength: 1, maxLength: 200, description: 'Exact event type, e.g. object.updated' },
    resourceType: { type: 'string', minLength: 1, maxLength: 200, description: 'Exact resource type, e.g. object' },
    resourceId: { type: 'string', minLength: 1, maxLength: 200, description: 'Exact resource id' },
    from: { ...Timestamp, description: 'Events with occurredAt at or after this time (inclusive)' },
    to: { ...Timestamp, description: 'Events with occurredAt before this time (exclusive); must not be before from' },
    tenant: ChainTenant
  }
} as const

export const ProofQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { tenant: ChainTenant }
} as const

export const AuditProof = {
  type: 'object',
  required: ['eventId', 'sequence', 'hash', 'previousHash', 'valid', 'checks', 'headSequence', 'headHash'],
  properties: {
    eventId: Uuid,
    sequence: { type: 'integer', minimum: 1 },
    hash: { ...Hash, description: 'The event\'s stored hash' },
    previousHash: { ...Hash, description: 'The event\'s stored previousHash' },
    valid: { type: 'boolean', description: 'True only when all three checks pass: false when any row between genesis and the head was altered, removed or added' },
    checks: {
      type: 'object',
      required: ['hashMatches', 'linkMatches', 'chainIntact'],
      properties: {
        hashMatches: { type: 'boolean', description: 'The event\'s hash recomputes from its fields and previousHash' },
        linkMatches: { type: 'boolean', description: 'The event\'s previousHash is the stored hash of the event before it (64 zeros for sequence 1)' },
        chainIntact: { type: 'boolean', description: 'Every event from genesis to the head recomputes and links, sequences run 1..head without a gap, and the last event is the recorded head' }
      }
    },
    headSequence: { type: 'integer', nullable: true, description: 'Sequence of the chain head; null if the head record is missing' },
    headHash: { ...Hash, nullable: true, description: 'Hash of the chain head; null if the head record is missing' },
    brokenAt: { type: 'integer', minimum: 1, description: 'Present when the chain is not intact: the first sequence where a check fails (a missing event fails at its own sequence)' }
  }
} as const

// ---- The Merkle tree (RFC 9162): signed tree heads, inclusion and consistency proofs ----

const TreeSize = { type: 'integer', minimum: 0, description: 'Number of leaves: the events with sequence 1..treeSize' } as const

export const TreeHeadQuery = ProofQuery

export const SignedTreeHead = {
  type: 'object',
  required: ['tenant', 'treeSize', 'rootHash', 'timestamp', 'signature', 'algorithm', 'keyId', 'publicKey'],
  properties: {
    tenant: { type: 'string', description: 'The chain the tree is built over' },
    treeSize: TreeSize,
    rootHash: { ...Hash, description: 'RFC 9162 Merkle tree hash of leaves 0..treeSize-1; leaf i = SHA-256(0x00 || bytes of the hash of the event with sequence i+1), node = SHA-256(0x01 || left || right); SHA-256 of nothing for an empty tree' },
    timestamp: { type: 'integer', description: 'When the head was signed, milliseconds since the epoch' },
    signature: {
      type: 'string',
      description: 'Ed25519 signature (base64) over, in TLS presentation order: opaque context<1..255> = "audit-tree-head-v1", ' +
        'opaque tenant<1..255> (UTF-8), uint64 timestamp, uint64 treeSize, opaque rootHash<1..255> (32 bytes); each opaque has a one-byte length prefix'
    },
    algorithm: { type: 'string', enum: ['Ed25519'] },
    keyId: { ...Hash, description: 'SHA-256 of the public key (SPKI DER)' },
    publicKey: { type: 'string', description: 'The signing public key, SPKI PEM. Pin it (or its keyId) out of band: a key that comes with the head proves nothing by itself' }
  }
} as const

// A tree size asked for: the upper bound keeps it exact in JavaScript and inside Postgres' bigint,
// where the query casts it (a larger one would fail there, a 500); above the current size it is
// a 400 anyway.
const RequestedSize = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const

export const InclusionProofQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    treeSize: { ...RequestedSize, description: 'Prove against the tree of this size (at least the event\'s sequence, at most the current size); default: the current tree' },
    tenant: ChainTenant
  }
} as const

const ProofPath = { type: 'array', items: Hash } as const

export const InclusionProof = {
  type: 'object',
  required: ['eventId', 'sequence', 'leafIndex', 'leafHash', 'treeSize', 'rootHash', 'auditPath', 'treeHead'],
  properties: {
    eventId: Uuid,
    sequence: { type: 'integer', minimum: 1 },
    leafIndex: { type: 'integer', minimum: 0, description: 'sequence - 1' },
    leafHash: { ...Hash, description: 'SHA-256(0x00 || bytes of the event\'s hash): recompute the event\'s hash from its fields, then this' },
    treeSize: { type: 'integer', minimum: 1 },
    rootHash: Hash,
    auditPath: { ...ProofPath, description: 'RFC 9162 2.1.3 inclusion proof PATH(leafIndex, D[treeSize]), from the leaf up; verify with RFC 9162 2.1.3.2' },
    treeHead: SignedTreeHead
  }
} as const

export const ConsistencyProofQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['first'] as string[],
  properties: {
    first: { ...RequestedSize, description: 'The older tree size' },
    second: { ...RequestedSize, description: 'The newer tree size (at least first, at most the current size); default: the current tree' },
    tenant: ChainTenant
  }
} as const

export const ConsistencyProof = {
  type: 'object',
  required: ['firstSize', 'secondSize', 'firstRootHash', 'secondRootHash', 'proof', 'treeHead'],
  properties: {
    firstSize: { type: 'integer', minimum: 1 },
    secondSize: { type: 'integer', minimum: 1 },
    firstRootHash: { ...Hash, description: 'Compare with the root of a tree head you kept' },
    secondRootHash: Hash,
    proof: { ...ProofPath, description: 'RFC 9162 2.1.4 consistency proof PROOF(firstSize, D[secondSize]); empty when the sizes are equal; verify with RFC 9162 2.1.4.2' },
    treeHead: SignedTreeHead
  }
} as const
