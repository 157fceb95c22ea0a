import { createHash, createPublicKey, verify } from 'node:crypto'

// An independent RFC 9162 implementation for the tests: the tree hash by the definition (2.1.1)
// and the verification algorithms of 2.1.3.2 and 2.1.4.2, step by step. It shares no code with
// lib/audit/merkle.ts, so a proof that passes here is a proof any RFC 9162 client accepts.

const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest()
const hashLeaf = (leaf: Buffer) => sha(Buffer.from([0]), leaf)
const hashChildren = (l: Buffer, r: Buffer) => sha(Buffer.from([1]), l, r)

/** MTH(D[n]) over leaf inputs (the events' chain hashes as bytes), by the recursive definition. */
export function mth (leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha()
  if (leaves.length === 1) return hashLeaf(leaves[0])
  let k = 1
  while (k * 2 < leaves.length) k *= 2
  return hashChildren(mth(leaves.slice(0, k)), mth(leaves.slice(k)))
}

export const leafOf = (chainHashHex: string): Buffer => hashLeaf(Buffer.from(chainHashHex, 'hex'))

/** RFC 9162 2.1.3.2: verifying an inclusion proof. */
export function verifyInclusion (leafIndex: number, treeSize: number, leaf: Buffer, path: Buffer[], root: Buffer): boolean {
  if (leafIndex >= treeSize) return false
  let fn = leafIndex
  let sn = treeSize - 1
  let r = leaf
  for (const p of path) {
    if (sn === 0) return false
    if ((fn & 1) === 1 || fn === sn) {
      r = hashChildren(p, r)
      if ((fn & 1) === 0) while ((fn & 1) === 0 && fn !== 0) { fn >>= 1; sn >>= 1 }
    } else {
      r = hashChildren(r, p)
    }
    fn >>= 1
    sn >>= 1
  }
  return sn === 0 && r.equals(root)
}

/** RFC 9162 2.1.4.2: verifying consistency between trees of size first <= second. */
export function verifyConsistency (first: number, second: number, firstRoot: Buffer, secondRoot: Buffer, proof: Buffer[]): boolean {
  if (first === second) return proof.length === 0 && firstRoot.equals(secondRoot)
  if (first < 1 || first > second || proof.length === 0) return false
  const path = Number.isInteger(Math.log2(first)) ? [firstRoot, ...proof] : [...proof]
  let fn = first - 1
  let sn = second - 1
  while ((fn & 1) === 1) { fn >>= 1; sn >>= 1 }
  let fr = path[0]
  let sr = path[0]
  for (const c of path.slice(1)) {
    if (sn === 0) return false
    if ((fn & 1) === 1 || fn === sn) {
      fr = hashChildren(c, fr)
      sr = hashChildren(c, sr)
      if ((fn & 1) === 0) while ((fn & 1) === 0 && fn !== 0) { fn >>= 1; sn >>= 1 }
    } else {
      sr = hashChildren(sr, c)
    }
    fn >>= 1
    sn >>= 1
  }
  return fr.equals(firstRoot) && sr.equals(secondRoot) && sn === 0
}

export interface TreeHeadBody { tenant: string, treeSize: number, rootHash: string, timestamp: number, signature: string, publicKey: string }

/** The signed bytes as the API documents them, rebuilt here, checked with the given public key. */
export function verifyTreeHead (h: TreeHeadBody, publicKeyPem = h.publicKey): boolean {
  const opaque = (b: Buffer) => Buffer.concat([Buffer.from([b.length]), b])
  const u64 = (n: number) => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b }
  const message = Buffer.concat([opaque(Buffer.from('audit-tree-head-v1')), opaque(Buffer.from(h.tenant)),
    u64(h.timestamp), u64(h.treeSize), opaque(Buffer.from(h.rootHash, 'hex'))])
  return verify(null, message, createPublicKey(publicKeyPem), Buffer.from(h.signature, 'base64'))
}

export const hexes = (xs: string[]): Buffer[] => xs.map(x => Buffer.from(x, 'hex'))
