import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { ChainWalker, GENESIS_HASH, eventHash, recomputeHash } from '../../lib/audit/index.js'
import type { HashedFields } from '../../lib/audit/hash.js'
import type { SequencedRow } from '../../lib/audit/sql.js'

const base: HashedFields = {
  sequence: 7,
  type: 'object.updated',
  actor: { sub: 'user-1', roles: ['owner', 'admin'] },
  resourceType: 'object',
  resourceId: '0b7c1f4e-2a7d-4a43-9f77-1f0e6c3c9d10',
  data: { typeId: 'x', version: 2, fields: ['attributes'], nested: { b: 1, a: [1, { z: true, y: null }] } },
  occurredAt: '2026-01-02T03:04:05.678Z'
}

describe('eventHash', () => {
  it('is deterministic and 64 lowercase hex characters', () => {
    const a = eventHash(GENESIS_HASH, base)
    assert.equal(a, eventHash(GENESIS_HASH, structuredClone(base)))
    assert.match(a, /^[0-9a-f]{64}$/)
  })

  it('hashes previousHash followed by the RFC 8785 canonical JSON of the fields', () => {
    const f: HashedFields = { sequence: 1, type: 't', actor: null, resourceType: null, resourceId: null, data: { b: 2, a: 1 }, occurredAt: '2026-01-01T00:00:00.000Z' }
    const canonical = '{"actor":null,"data":{"a":1,"b":2},"occurredAt":"2026-01-01T00:00:00.000Z","resourceId":null,"resourceType":null,"sequence":1,"type":"t"}'
    assert.equal(eventHash(GENESIS_HASH, f), createHash('sha256').update(GENESIS_HASH + canonical).digest('hex'))
  })

  it('does not depend on key order, at the top level or nested in data and actor', () => {
    const reordered: HashedFields = {
      occurredAt: base.occurredAt,
      data: { nested: { a: [1, { y: null, z: true }], b: 1 }, fields: ['attributes'], version: 2, typeId: 'x' },
      resourceId: base.resourceId,
      actor: { roles: ['owner', 'admin'], sub: 'user-1' },
      type: base.type,
      resourceType: base.resourceType,
      sequence: base.sequence
    }
    assert.equal(eventHash(GENESIS_HASH, reordered), eventHash(GENESIS_HASH, base))
  })

  it('changes when any hashed field or the previous hash changes', () => {
    const h = eventHash(GENESIS_HASH, base)
    const variants: Array<[string, HashedFields]> = [
      ['sequence', { ...base, sequence: 8 }],
      ['type', { ...base, type: 'object.deleted' }],
      ['actor.sub', { ...base, actor: { sub: 'user-2', roles: ['owner', 'admin'] } }],
      ['actor.roles order', { ...base, actor: { sub: 'user-1', roles: ['admin', 'owner'] } }],
      ['actor null', { ...base, actor: null }],
      ['resourceType', { ...base, resourceType: 'relation' }],
      ['resourceId', { ...base, resourceId: null }],
      ['data value', { ...base, data: { ...(base.data as object), version: 3 } }],
      ['data nested', { ...base, data: { ...(base.data as object), nested: { b: 1, a: [1, { z: false, y: null }] } } }],
      ['data number type', { ...base, data: { ...(base.data as object), version: '2' } }],
      ['occurredAt by 1 ms', { ...base, occurredAt: '2026-01-02T03:04:05.679Z' }]
    ]
    for (const [name, v] of variants) assert.notEqual(eventHash(GENESIS_HASH, v), h, `${name} must change the hash`)
    assert.notEqual(eventHash('f'.repeat(64), base), h, 'previousHash must change the hash')
  })
})

/** A well-formed chain of n rows, as the sequencer would write it. */
function chain (n: number): SequencedRow[] {
  const rows: SequencedRow[] = []
  let prev = GENESIS_HASH
  for (let i = 1; i <= n; i++) {
    const r: SequencedRow = {
      id: `id-${i}`, sequence: i, type: 'object.created', actor: null, resource_type: 'object', resource_id: `o${i}`,
      data: { i }, occurred_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)), previous_hash: prev, hash: null
    }
    r.hash = recomputeHash(r)
    prev = r.hash
    rows.push(r)
  }
  return rows
}

function walk (rows: SequencedRow[], targetId: string, head = { sequence: rows.length, hash: rows[rows.length - 1].hash ?? '' }): ChainWalker {
  const w = new ChainWalker(targetId, head)
  for (const r of rows) w.step(r)
  w.finish()
  return w
}

describe('ChainWalker', () => {
  it('finds an untouched chain intact and the target matching', () => {
    const w = walk(chain(5), 'id-3')
    assert.equal(w.brokenAt, null)
    assert.deepEqual(w.target, { hashMatches: true, linkMatches: true })
  })

  it('breaks at an altered row; the target after it still matches on its own', () => {
    const rows = chain(5)
    rows[1].data = { i: 99 }
    const w = walk(rows, 'id-4')
    assert.equal(w.brokenAt, 2)
    assert.deepEqual(w.target, { hashMatches: true, linkMatches: true })
    assert.deepEqual(walk(rows, 'id-2').target, { hashMatches: false, linkMatches: true })
  })

  it('breaks where a recomputed hash no longer links, when the forger rewrote one hash', () => {
    const rows = chain(5)
    rows[1].data = { i: 99 }
    rows[1].hash = recomputeHash(rows[1])
    const w = walk(rows, 'id-3')
    assert.equal(w.brokenAt, 3)
    assert.deepEqual(w.target, { hashMatches: true, linkMatches: false })
  })

  it('breaks at a missing sequence', () => {
    const rows = chain(5)
    rows.splice(2, 1)
    const w = walk(rows, 'id-4')
    assert.equal(w.brokenAt, 3)
    assert.deepEqual(w.target, { hashMatches: true, linkMatches: false })
  })

  it('breaks when the chain stops short of the head, ends on another hash, or runs past it', () => {
    const rows = chain(5)
    assert.equal(walk(rows.slice(0, 4), 'id-1', { sequence: 5, hash: rows[4].hash ?? '' }).brokenAt, 5)
    assert.equal(walk(rows, 'id-1', { sequence: 5, hash: 'a'.repeat(64) }).brokenAt, 5)
    assert.equal(walk(rows, 'id-1', { sequence: 4, hash: rows[3].hash ?? '' }).brokenAt, 5)
  })

  it('breaks at 1 when the first row does not start from genesis', () => {
    const rows = chain(3)
    rows[0].previous_hash = 'b'.repeat(64)
    rows[0].hash = recomputeHash(rows[0])
    assert.equal(walk(rows, 'id-3').brokenAt, 1)
  })
})
