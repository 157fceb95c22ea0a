import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, generateKeyPairSync } from 'node:crypto'
import { loadConfig } from '../../lib/config.js'
import { signTreeHead } from '../../lib/audit/signing.js'
import { appendLeaves, consistencyRanges, foldRight, frontierKeys, hashRanges, inclusionRanges, keysOf, leafHash, nodeHash, inclusionNodeKeys, consistencyNodeKeys, type NodeKey, type StoredNode } from '../../lib/audit/merkle.js'
import { mth, verifyConsistency, verifyInclusion, verifyTreeHead } from '../support/rfc9162.js'

const chainHash = (i: number) => createHash('sha256').update(`event ${i}`).digest('hex')
const N = 70

/** Every complete subtree of a tree of N leaves plus its leaves, built by appending in uneven batches. */
function grow (batches: number[]): { nodes: StoredNode[], frontiers: Buffer[][] } {
  const nodes: StoredNode[] = []
  const frontiers: Buffer[][] = [[]]
  let size = 0
  let frontier: Buffer[] = []
  for (const b of batches) {
    const leaves = Array.from({ length: b }, (_, j) => leafHash(chainHash(size + j)))
    leaves.forEach((h, j) => nodes.push({ level: 0, idx: size + j, hash: h }))
    const r = appendLeaves(size, frontier, leaves)
    nodes.push(...r.nodes)
    frontier = r.frontier
    size += b
    frontiers[size] = frontier
  }
  return { nodes, frontiers }
}

describe('lib/audit/merkle (RFC 9162 tree)', () => {
  const batches = [1, 1, 2, 3, 1, 5, 8, 1, 1, 13, 4, 2, 7, 21]
  assert.equal(batches.reduce((a, b) => a + b), N)
  const inputs = Array.from({ length: N }, (_, i) => Buffer.from(chainHash(i), 'hex'))
  const { nodes, frontiers } = grow(batches)

  it('stores exactly one node per complete subtree of level >= 1, keyed (level, idx), with the RFC hash', () => {
    const inner = nodes.filter(n => n.level > 0)
    let expected = 0
    for (let l = 1; 2 ** l <= N; l++) expected += Math.floor(N / 2 ** l)
    assert.equal(inner.length, expected)
    for (const n of inner) assert.deepEqual(n.hash, mth(inputs.slice(n.idx * 2 ** n.level, (n.idx + 1) * 2 ** n.level)), `${n.level}:${n.idx}`)
  })

  it('folds each batch-end frontier into the root of that size', () => {
    for (let n = 0; n <= N; n++) if (frontiers[n] !== undefined) assert.deepEqual(foldRight(frontiers[n]), mth(inputs.slice(0, n)), `size ${n}`)
    assert.equal(frontierKeys(0b1011).map(k => `${k.level}:${k.idx}`).join(' '), '3:0 1:4 0:10')
  })

  it('refuses a frontier that does not match the size', () => {
    assert.throws(() => appendLeaves(3, [leafHash(chainHash(0))], []), /frontier/)
  })

  it('makes inclusion proofs that the RFC 9162 verifier accepts, for every index of every size 1..70', () => {
    for (let n = 1; n <= N; n++) {
      const root = mth(inputs.slice(0, n))
      for (let m = 0; m < n; m++) {
        const ranges = inclusionRanges(m, n)
        const path = hashRanges(ranges, nodes)
        assert.ok(verifyInclusion(m, n, leafHash(chainHash(m)), path, root), `leaf ${m} of ${n}`)
        assert.ok(path.length <= Math.ceil(Math.log2(n)))
        assert.ok(keysOf(ranges).length <= 2 * Math.ceil(Math.log2(n)) + 1, 'O(log n) nodes to fetch')
        if (n > 1) assert.equal(verifyInclusion(m, n, leafHash(chainHash(m + 1)), path, root), false, 'another leaf fails')
      }
    }
  })

  it('makes consistency proofs that the RFC 9162 verifier accepts, for every pair 1 <= m < n <= 70', () => {
    for (let n = 2; n <= N; n++) {
      const second = mth(inputs.slice(0, n))
      for (let m = 1; m < n; m++) {
        const first = mth(inputs.slice(0, m))
        const proof = hashRanges(consistencyRanges(m, n), nodes)
        assert.ok(verifyConsistency(m, n, first, second, proof), `${m} -> ${n}`)
        assert.equal(verifyConsistency(m, n, nodeHash(first, first), second, proof), false, 'a wrong old root fails')
      }
    }
  })

  it('plans exactly the nodes a proof and its roots are made of from the leaf index and sizes alone (the one-statement lookup)', () => {
    const sorted = (keys: NodeKey[]) => keys.map(k => `${k.level}:${k.idx}`).sort()
    for (let n = 1; n <= 300; n++) {
      for (let m = 0; m < n; m++) {
        assert.deepEqual(sorted(inclusionNodeKeys(m, n)), sorted(keysOf([...inclusionRanges(m, n), [0, n]])), `leaf ${m} of ${n}`)
      }
      for (let f = 1; f <= n; f++) {
        const ranges = f === n ? [] : consistencyRanges(f, n)
        assert.deepEqual(sorted(consistencyNodeKeys(f, n)), sorted(keysOf([...ranges, [0, f], [0, n]])), `${f} -> ${n}`)
      }
    }
    const big = 1_000_000
    assert.deepEqual(sorted(inclusionNodeKeys(123_456, big)), sorted(keysOf([...inclusionRanges(123_456, big), [0, big]])))
  })
})

describe('lib/audit/signing (signed tree heads)', () => {
  const root = mth([Buffer.from('a')])
  const base = { DATABASE_URL: 'postgres://x@h/d', AUTH_JWT_SECRET: 'a'.repeat(32) }

  it('signs with AUDIT_SIGNING_KEY (also given on one line with \\n escapes), verifiable with its public key', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519')
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    const publicPem = publicKey.export({ format: 'pem', type: 'spki' }).toString()
    for (const value of [pem, pem.replace(/\n/g, '\\n')]) {
      const head = signTreeHead(loadConfig({ ...base, AUDIT_SIGNING_KEY: value }), 'acme', 7, root, 1_700_000_000_000)
      assert.equal(head.publicKey, publicPem)
      assert.ok(verifyTreeHead(head, publicPem))
      assert.equal(verifyTreeHead({ ...head, timestamp: head.timestamp + 1 }, publicPem), false)
    }
  })

  it('derives one key from AUTH_JWT_SECRET, the same in every process and different for another secret', () => {
    const a = signTreeHead(loadConfig(base), 'acme', 7, root, 1)
    const again = signTreeHead(loadConfig({ ...base }), 'acme', 7, root, 1)
    const other = signTreeHead(loadConfig({ ...base, AUTH_JWT_SECRET: 'b'.repeat(32) }), 'acme', 7, root, 1)
    assert.equal(a.keyId, again.keyId)
    assert.equal(a.signature, again.signature, 'Ed25519 is deterministic')
    assert.notEqual(a.keyId, other.keyId)
    assert.ok(verifyTreeHead(a))
    assert.equal(verifyTreeHead(a, other.publicKey), false)
  })
})
