import type { ServiceContext } from '../context.js'
import { isUuid } from '../db.js'
import { notFound, validationError } from '../errors.js'
import { authorizeChain } from './list.js'
import { consistencyRanges, foldRight, hashRanges, inclusionRanges, leafHash } from './merkle.js'
import { sequencePending } from './sequencer.js'
import { signTreeHead, type SignedTreeHead } from './signing.js'
import * as sql from './sql.js'

// The read side of the Merkle tree: signed tree heads, inclusion and consistency proofs. Every
// proof reads its O(log n) nodes in one query (sql.fetchNodes); nodes of a tree of size <= the
// head never change once committed, so separate statements need no shared snapshot.

export interface InclusionProof {
  eventId: string
  sequence: number
  leafIndex: number
  leafHash: string
  treeSize: number
  rootHash: string
  auditPath: string[]
  treeHead: SignedTreeHead
}

export interface ConsistencyProof {
  firstSize: number
  secondSize: number
  firstRootHash: string
  secondRootHash: string
  proof: string[]
  treeHead: SignedTreeHead
}

const hex = (b: Buffer) => b.toString('hex')

/** GET /v1/audit/tree-head: the current tree (pending events sequenced first), signed. */
export async function treeHead (ctx: ServiceContext, q: { tenant?: string } = {}): Promise<SignedTreeHead> {
  const chain = await authorizeChain(ctx, q.tenant)
  await sequencePending(ctx.db, chain)
  const head = await sql.readTreeHead(ctx.db, chain) ?? { size: 0, frontier: [] }
  return signTreeHead(ctx.config, chain, head.size, foldRight(head.frontier))
}

/**
 * GET /v1/audit/events/{id}/inclusion-proof: RFC 9162 PATH(sequence - 1, D[treeSize]); treeSize
 * defaults to the current tree. One statement finds the event and reads the proof's nodes; an
 * event still pending is sequenced first, as a list would, and looked up again.
 */
export async function inclusionProof (ctx: ServiceContext, id: string, q: { tenant?: string, treeSize?: number } = {}): Promise<InclusionProof> {
  const chain = await authorizeChain(ctx, q.tenant)
  if (!isUuid(id)) notFound('audit event', id)
  let leaf = await sql.inclusionProofNodes(ctx.db, chain, id, q.treeSize)
  if (leaf === null || leaf.sequence > leaf.treeSize) {
    await sequencePending(ctx.db, chain)
    leaf = await sql.inclusionProofNodes(ctx.db, chain, id, q.treeSize)
  }
  if (leaf === null || leaf.sequence > leaf.treeSize) notFound('audit event', id)
  const n = q.treeSize ?? leaf.treeSize
  if (n < leaf.sequence) throw validationError('treeSize', `must be at least the event's sequence (${leaf.sequence})`)
  if (n > leaf.treeSize) throw validationError('treeSize', `must not exceed the tree's current size (${leaf.treeSize})`)
  const path = hashRanges(inclusionRanges(leaf.sequence - 1, n), leaf.nodes)
  const [root] = hashRanges([[0, n]], leaf.nodes)
  return {
    eventId: id,
    sequence: leaf.sequence,
    leafIndex: leaf.sequence - 1,
    leafHash: hex(leafHash(leaf.hash)),
    treeSize: n,
    rootHash: hex(root),
    auditPath: path.map(hex),
    treeHead: signTreeHead(ctx.config, chain, n, root)
  }
}

/**
 * GET /v1/audit/consistency-proof: RFC 9162 PROOF(first, D[second]) with both roots; second
 * defaults to the current tree (pending events sequenced first). One statement reads the tree's
 * size and the proof's nodes. first == second gives an empty proof.
 */
export async function consistencyProof (ctx: ServiceContext, q: { tenant?: string, first: number, second?: number }): Promise<ConsistencyProof> {
  const chain = await authorizeChain(ctx, q.tenant)
  if (q.second === undefined) await sequencePending(ctx.db, chain)
  const { treeSize: size, nodes } = await sql.consistencyProofNodes(ctx.db, chain, q.first, q.second)
  const second = q.second ?? size
  if (second > size) throw validationError('second', `must not exceed the tree's current size (${size})`)
  if (q.first > second) throw validationError('first', `must not exceed second (${second})`)
  const ranges = q.first === second ? [] : consistencyRanges(q.first, second)
  const [firstRoot, secondRoot] = hashRanges([[0, q.first], [0, second]], nodes)
  return {
    firstSize: q.first,
    secondSize: second,
    firstRootHash: hex(firstRoot),
    secondRootHash: hex(secondRoot),
    proof: hashRanges(ranges, nodes).map(hex),
    treeHead: signTreeHead(ctx.config, chain, second, secondRoot)
  }
}
