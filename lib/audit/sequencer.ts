import type { Db, Tx } from '../db.js'
import { withTransaction } from '../db.js'
import { GENESIS_HASH, eventHash, hashedFields } from './hash.js'
import { appendLeaves, leafHash } from './merkle.js'
import * as sql from './sql.js'

const BATCH = 1000

/**
 * Gives every pending (unsequenced) event of a tenant its sequence and hash, in arrival order,
 * under the tenant's head lock. Invariants: the sequence continues from the head with no gap, and
 * only the head-lock holder assigns sequences, so the chain cannot fork (the unique index on
 * (tenant_id, sequence) backs this up). The statement that moves the head also appends the events
 * to the tenant's Merkle tree (lib/audit/merkle.ts): the frontier kept on the head row, and about
 * one stored node per event. Inside a write's transaction (sync mode) it also sequences that
 * write's own events; on the pool it runs in its own transaction (async mode).
 */
export async function sequencePending (db: Db | Tx, tenantId: string): Promise<number> {
  return (await sequenceAll(db, tenantId, false))!
}

/**
 * With `skipLocked` (the background Sequencer): null, having waited for nothing, when another
 * transaction holds the tenant's head (another worker's or API's sequencer, which sequences what
 * it finds; the caller tries again shortly for what committed after that holder's read).
 */
async function sequenceAll (db: Db | Tx, tenantId: string, skipLocked: boolean): Promise<number | null> {
  let total = 0
  for (;;) {
    const n = await withTransaction(db, tx => sequenceBatch(tx, tenantId, skipLocked))
    if (n === null) return total > 0 ? total : null
    total += n
    if (n < BATCH || db.isTransaction) return total
  }
}

async function sequenceBatch (tx: Tx, tenantId: string, skipLocked: boolean): Promise<number | null> {
  const locked = await sql.lockHead(tx, tenantId, GENESIS_HASH, skipLocked)
  if (locked === null) return null
  let head = locked
  if (head.treeSize !== head.sequence) {
    // The head moved without the tree (a process of an older release): rebuild it first.
    await sql.rebuildTree(tx, tenantId)
    head = await sql.lockHead(tx, tenantId, GENESIS_HASH)
  }
  const rows = await sql.pendingEvents(tx, tenantId, BATCH)
  if (rows.length === 0) return 0
  let { sequence, hash } = head
  const assigned = rows.map(r => {
    sequence += 1
    const previousHash = hash
    hash = eventHash(previousHash, hashedFields(r, sequence))
    return { id: r.id, sequence, previousHash, hash }
  })
  const tree = appendLeaves(head.sequence, head.frontier, assigned.map(a => leafHash(a.hash)))
  await sql.appendToChain(tx, tenantId, { events: assigned, nodes: tree.nodes, head: { sequence, hash, frontier: tree.frontier } })
  return rows.length
}

/**
 * Coalesces "sequence this tenant" requests within one process. A kick waits for the window
 * (`batchMs`, 200 ms) so that the writes of that window are sequenced by one transaction (one
 * commit instead of one per write), or less when `fullAt` kicks (writes) of the tenant have come
 * meanwhile: a window's run then has a batch's worth to do and starts at once. At most one run per
 * tenant is in flight, and a kick that arrives during a run causes exactly one more run after it
 * (the run in flight may have read the pending rows before the new event committed), after its own
 * window. docs/behaviour.md "Audit" allows one second from answer to sequenced; a reader (list,
 * proof) sequences the chain itself first; the sweep is the backstop for kicks lost with a process.
 */
export class Sequencer {
  private running = new Map<string, Promise<void>>()
  private again = new Set<string>()
  /** Kicks per tenant since its last run began, and the wake-up of a run waiting for its window. */
  private kicks = new Map<string, number>()
  private wake = new Map<string, () => void>()
  private timer: NodeJS.Timeout | null = null

  constructor (private readonly db: Db, private readonly onError: (err: unknown) => void, private readonly batchMs = 200, private readonly fullAt = BATCH / 2) {}

  kick (tenantId: string): Promise<void> {
    const kicks = (this.kicks.get(tenantId) ?? 0) + 1
    this.kicks.set(tenantId, kicks)
    if (kicks >= this.fullAt) this.wake.get(tenantId)?.()
    const inFlight = this.running.get(tenantId)
    if (inFlight) {
      this.again.add(tenantId)
      return inFlight
    }
    const run = (async () => {
      try {
        let busy = false
        do {
          // Every run, the first and each one a kick asked for meanwhile, waits for the window
          // first: under steady writes, runs come once per window, not back to back.
          const wait = busy ? Math.max(this.batchMs, 10) : this.batchMs
          if (wait > 0 && (this.kicks.get(tenantId) ?? 0) < this.fullAt) await this.window(tenantId, wait)
          this.kicks.delete(tenantId)
          this.again.delete(tenantId)
          // Another process holds the head: it sequences what had committed when it read; what
          // committed after is ours, once it is done (a pool connection waits for nothing meanwhile).
          busy = await sequenceAll(this.db, tenantId, true) === null
          if (busy) this.again.add(tenantId)
        } while (this.again.has(tenantId))
      } catch (err) {
        this.onError(err)
      } finally {
        this.running.delete(tenantId)
      }
    })()
    this.running.set(tenantId, run)
    return run
  }

  /** Waits `ms`, or until the tenant's kicks reach `fullAt`. */
  private window (tenantId: string, ms: number): Promise<void> {
    return new Promise(resolve => {
      const done = () => { clearTimeout(timer); this.wake.delete(tenantId); resolve() }
      const timer = setTimeout(done, ms)
      this.wake.set(tenantId, done)
    })
  }

  /** Backstop sweep for events whose kick was lost (a process that died after commit). */
  startSweeping (intervalMs = 500): void {
    this.timer = setInterval(() => { void this.sweep() }, intervalMs)
    this.timer.unref()
  }

  async sweep (): Promise<void> {
    try {
      const tenants = await sql.tenantsWithPending(this.db)
      await Promise.all(tenants.map(t => this.kick(t)))
    } catch (err) {
      this.onError(err)
    }
  }

  async stop (): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    await Promise.all(this.running.values())
  }
}
