import { createHash } from 'node:crypto'

// The Merkle tree of RFC 9162 section 2.1 over a tenant's chain: leaf i is the event with
// sequence i + 1. Pure functions (no I/O): the sequencer appends with them, the prover plans which
// stored nodes a proof needs and folds them into the proof's hashes.

const LEAF_PREFIX = Buffer.from([0x00])
const NODE_PREFIX = Buffer.from([0x01])

/** MTH({}) = SHA-256 of the empty string (RFC 9162 2.1.1). */
export const EMPTY_ROOT = createHash('sha256').digest()

/** The leaf of an event: SHA-256(0x00 || the 32 bytes of its chain hash). */
export function leafHash (chainHashHex: string): Buffer {
  return createHash('sha256').update(LEAF_PREFIX).update(Buffer.from(chainHashHex, 'hex')).digest()
}

export function nodeHash (left: Buffer, right: Buffer): Buffer {
  return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest()
}

/**
 * A complete (perfect) subtree: the 2^level leaves from idx * 2^level. Level 0 is a leaf; only
 * levels >= 1 are stored (audit_tree_nodes), leaves are derived from the events' chain hashes.
 */
export interface NodeKey { level: number, idx: number }
export interface StoredNode extends NodeKey { hash: Buffer }

/** Leaves [lo, hi) of the tree: one element of a proof. */
export type Range = readonly [lo: number, hi: number]

/** The largest power of two strictly below n (n >= 2): where RFC 9162 splits a tree of n leaves. */
export function splitPoint (n: number): number {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

/**
 * The complete subtrees a tree of `n` leaves is made of, left to right: one per set bit of n,
 * largest first. Their hashes (the frontier) are all an append needs, and fold into the root.
 */
export function frontierKeys (n: number): NodeKey[] {
  const keys: NodeKey[] = []
  for (let level = 52; level >= 0; level--) {
    const size = 2 ** level
    if (Math.floor(n / size) % 2 === 1) keys.push({ level, idx: Math.floor(n / size) - 1 })
  }
  return keys
}

/** Folds complete subtrees, left to right, into the hash of the range they cover. */
export function foldRight (hashes: Buffer[]): Buffer {
  if (hashes.length === 0) return EMPTY_ROOT
  let h = hashes[hashes.length - 1]
  for (let i = hashes.length - 2; i >= 0; i--) h = nodeHash(hashes[i], h)
  return h
}

/**
 * Appends leaves to a tree of `size` leaves given its frontier. Returns the new frontier and every
 * complete subtree of level >= 1 that the appends closed (about one per leaf, at most log n for
 * one leaf): exactly the rows to store.
 */
export function appendLeaves (size: number, frontier: Buffer[], leaves: Buffer[]): { frontier: Buffer[], nodes: StoredNode[] } {
  const stack = frontierKeys(size).map((k, i) => ({ level: k.level, hash: frontier[i] }))
  if (stack.length !== frontier.length) throw new Error(`frontier of a tree of ${size} leaves has ${frontier.length} hashes, not ${stack.length}`)
  const nodes: StoredNode[] = []
  let n = size
  for (const leaf of leaves) {
    n += 1
    stack.push({ level: 0, hash: leaf })
    while (stack.length >= 2 && stack[stack.length - 1].level === stack[stack.length - 2].level) {
      const right = stack.pop()!
      const left = stack.pop()!
      const level = left.level + 1
      const hash = nodeHash(left.hash, right.hash)
      stack.push({ level, hash })
      nodes.push({ level, idx: Math.floor(n / 2 ** level) - 1, hash })
    }
  }
  return { frontier: stack.map(s => s.hash), nodes }
}

/** The complete subtrees covering a range of the RFC 9162 shape (its start aligned to its split). */
export function cover ([lo, hi]: Range): NodeKey[] {
  const size = hi - lo
  if (size <= 0) return []
  const level = Math.log2(size)
  if (Number.isInteger(level) && lo % size === 0) return [{ level, idx: lo / size }]
  const k = splitPoint(size)
  return [...cover([lo, lo + k]), ...cover([lo + k, hi])]
}

/** RFC 9162 2.1.3.1 PATH(m, D[n]): the sibling ranges of leaf m, from the leaf up. */
export function inclusionRanges (m: number, n: number): Range[] {
  const siblings: Range[] = [] // top down
  let lo = 0
  let hi = n
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo)
    if (m < lo + k) { siblings.push([lo + k, hi]); hi = lo + k } else { siblings.push([lo, lo + k]); lo += k }
  }
  return siblings.reverse()
}

/**
 * RFC 9162 2.1.4.1 PROOF(m, D[n]) = SUBPROOF(m, D[n], true), 0 < m < n, unrolled: the sibling
 * of each step, deepest first, preceded by the subtree the walk stops at unless that subtree is
 * the old tree itself (the flag b still true).
 */
export function consistencyRanges (m: number, n: number): Range[] {
  const siblings: Range[] = [] // top down
  let lo = 0
  let hi = n
  let b = true
  while (m !== hi) {
    const k = splitPoint(hi - lo)
    if (m - lo <= k) { siblings.push([lo + k, hi]); hi = lo + k } else { siblings.push([lo, lo + k]); lo += k; b = false }
  }
  return [...(b ? [] : [[lo, hi] as const]), ...siblings.reverse()]
}

/** Every stored node (or leaf) the given ranges are made of, without repeats. */
export function keysOf (ranges: Range[]): NodeKey[] {
  const seen = new Map<string, NodeKey>()
  for (const r of ranges) for (const k of cover(r)) seen.set(`${k.level}:${k.idx}`, k)
  return [...seen.values()]
}

/**
 * The stored nodes (and leaves) a proof is made of, computed from the leaf index and sizes alone,
 * without the ranges: the same sets as sql.ts proofNodesSql computes in the database, so a proof
 * is one statement. Inclusion PATH(m, D[n]) and the root: the complete sibling of leaf m's ancestor
 * at each level, plus the frontier of n (the root; also the one incomplete sibling a path can
 * have, a suffix [x, n)).
 */
export function inclusionNodeKeys (m: number, n: number): NodeKey[] {
  return proofNodeKeys(m, n, n, 1)
}

/**
 * PROOF(f, D[n]) and both roots: the siblings of leaf f - 1 from the level of f's smallest
 * complete subtree up (below it they lie inside the old tree), plus the frontiers of f and n.
 */
export function consistencyNodeKeys (f: number, n: number): NodeKey[] {
  let lowest = 1
  while (f > 0 && (f / lowest) % 2 === 0) lowest *= 2
  return proofNodeKeys(f < n ? f - 1 : -1, n, f, lowest)
}

/** Siblings of leaf m at the levels l where 2^l >= `from` (m < 0: none), then the frontiers of n and f. */
function proofNodeKeys (m: number, n: number, f: number, from: number): NodeKey[] {
  const keys: NodeKey[] = []
  for (let level = 0; m >= 0 && 2 ** level <= n; level++) {
    const ancestor = Math.floor(m / 2 ** level)
    const sibling = ancestor % 2 === 0 ? ancestor + 1 : ancestor - 1
    if (2 ** level >= from && (sibling + 1) * 2 ** level <= n) keys.push({ level, idx: sibling })
  }
  const seen = new Set(keys.map(k => `${k.level}:${k.idx}`))
  for (const k of [...frontierKeys(n), ...frontierKeys(f)]) {
    if (!seen.has(`${k.level}:${k.idx}`)) { seen.add(`${k.level}:${k.idx}`); keys.push(k) }
  }
  return keys
}

/** The hash of each range from the fetched nodes; a missing node is an error (a damaged tree). */
export function hashRanges (ranges: Range[], nodes: StoredNode[]): Buffer[] {
  const byKey = new Map(nodes.map(n => [`${n.level}:${n.idx}`, n.hash]))
  return ranges.map(r => foldRight(cover(r).map(k => {
    const h = byKey.get(`${k.level}:${k.idx}`)
    if (h === undefined) throw new Error(`tree node ${k.level}:${k.idx} is missing`)
    return h
  })))
}
