import type { ServiceContext } from '../context.js'
import { isUuid, type Tx } from '../db.js'
import { notFound } from '../errors.js'
import { GENESIS_HASH, eventHash, hashedFields } from './hash.js'
import { sequencePending } from './sequencer.js'
import { authorizeChain } from './list.js'
import * as sql from './sql.js'

/** Rows read per query while walking a chain: memory stays bounded however long the chain is. */
export const PROOF_BATCH = 1000

export interface Head { sequence: number, hash: string }

export interface Proof {
  eventId: string
  sequence: number
  hash: string
  previousHash: string
  valid: boolean
  checks: { hashMatches: boolean, linkMatches: boolean, chainIntact: boolean }
  headSequence: number | null
  headHash: string | null
  brokenAt?: number
}

/** The stored hash recomputed from the row's own fields and its stored previous_hash. */
export function recomputeHash (r: sql.SequencedRow): string {
  return eventHash(r.previous_hash ?? '', hashedFields(r, r.sequence))
}

/**
 * Folds a chain, fed in sequence order, into a verdict. Pure (no I/O), so any tampering pattern
 * can be unit-tested. Per row it checks: the sequence is the next one (no gap), previous_hash is the
 * prior row's stored hash (genesis for sequence 1), and the stored hash recomputes. `brokenAt` is the
 * first sequence where any check fails; a missing row counts as failing at its own sequence.
 */
export class ChainWalker {
  private expected = 1
  private lastHash = GENESIS_HASH
  brokenAt: number | null = null
  target: { hashMatches: boolean, linkMatches: boolean } | null = null

  constructor (private readonly targetId: string, private readonly head: Head | null) {}

  get lastSequence (): number { return this.expected - 1 }

  /** True once nothing more can change the verdict (broken, and the target seen). */
  get settled (): boolean { return this.brokenAt !== null && this.target !== null }

  step (r: sql.SequencedRow): void {
    const gapless = r.sequence === this.expected
    if (!gapless) this.fail(this.expected)
    // A row past the head was never sequenced by the head-lock holder.
    if (r.sequence > (this.head?.sequence ?? 0)) this.fail((this.head?.sequence ?? 0) + 1)
    const linkMatches = gapless && r.previous_hash === this.lastHash
    const hashMatches = r.hash !== null && recomputeHash(r) === r.hash
    if (!linkMatches || !hashMatches) this.fail(r.sequence)
    if (r.id === this.targetId) this.target = { hashMatches, linkMatches }
    this.expected = r.sequence + 1
    this.lastHash = r.hash ?? ''
  }

  /** After the last row: the chain must end exactly at the head, with the head's hash. */
  finish (): void {
    const head = this.head ?? { sequence: 0, hash: GENESIS_HASH }
    if (this.lastSequence < head.sequence) this.fail(this.lastSequence + 1)
    else if (this.lastSequence === head.sequence && this.lastHash !== head.hash) this.fail(Math.max(head.sequence, 1))
  }

  private fail (sequence: number): void {
    if (this.brokenAt === null || sequence < this.brokenAt) this.brokenAt = sequence
  }
}

/**
 * GET /v1/audit/events/{id}/proof. Recomputes the whole chain from genesis to the head
 * (docs/behaviour.md "Audit": `valid` is false when any row between genesis and head was altered),
 * in batches, inside one repeatable-read snapshot so a concurrent sequencer cannot make a
 * consistent chain look broken.
 */
export async function proveEvent (ctx: ServiceContext, id: string, q: { tenant?: string } = {}): Promise<Proof> {
  const chain = await authorizeChain(ctx, q.tenant)
  if (!isUuid(id)) notFound('audit event', id)
  await sequencePending(ctx.db, chain)
  return ctx.db.transaction(tx => proveInSnapshot(tx, chain, id), { isolationLevel: 'repeatable read', readOnly: true })
}

async function proveInSnapshot (tx: Tx, tenantId: string, id: string): Promise<Proof> {
  const event = await sql.findSequencedEvent(tx, tenantId, id) ?? notFound('audit event', id)
  const head = await sql.readHead(tx, tenantId)
  const walker = await walkChain(tx, tenantId, id, head)
  const target = walker.target ?? { hashMatches: false, linkMatches: false }
  const chainIntact = walker.brokenAt === null
  return {
    eventId: event.id,
    sequence: event.sequence,
    hash: event.hash ?? '',
    previousHash: event.previous_hash ?? '',
    valid: chainIntact && target.hashMatches && target.linkMatches,
    checks: { ...target, chainIntact },
    headSequence: head?.sequence ?? null,
    headHash: head?.hash ?? null,
    ...(walker.brokenAt === null ? {} : { brokenAt: walker.brokenAt })
  }
}

/** Streams the chain in sequence order, PROOF_BATCH rows at a time. */
export async function walkChain (tx: Tx, tenantId: string, targetId: string, head: Head | null): Promise<ChainWalker> {
  const walker = new ChainWalker(targetId, head)
  let after = 0
  for (;;) {
    const rows = await sql.chainBatch(tx, tenantId, after, PROOF_BATCH)
    for (const r of rows) walker.step(r)
    if (rows.length < PROOF_BATCH || walker.settled) break
    after = rows[rows.length - 1].sequence
  }
  if (!walker.settled) walker.finish()
  return walker
}
