import { AppError } from '../../lib/errors.js'
import type { RouteRequest } from '../http/route.js'

export interface TenantGateOptions {
  /** Requests of one tenant in flight at once in this process; 0: no gate. */
  maxConcurrent: number
  /** Requests of one tenant waiting for a slot; one more is refused at once. */
  maxQueued: number
  /** The longest a request waits for a slot before it is refused. */
  maxWaitMs: number
  /** What the refusal names: 'requests', or 'heavy requests' for the lane of requests whose cost the caller chooses. */
  kind?: string
  /**
   * Slots beyond `maxConcurrent` paid for by time (the heavy lane): up to `slots` at once while
   * the tenant's credit covers what its requests in flight will take. Absent: no widening.
   */
  burst?: { slots: number, creditMs: number }
  /** Where each request's tenant is recorded on entry, shared by a process's gates. */
  recent?: RecentTenants
  /**
   * Slots a tenant may hold while `recent` has seen no other tenant within its window: nobody
   * else is there to protect, so the lane does not keep the machine idle. Absent: none.
   */
  alone?: number
  /**
   * Bytes a second a tenant's answers to the requests this gate let in are sent at, together, at
   * most, once an allowance of one second's worth is spent, while another tenant has entered
   * within `recent`'s window (always, without `recent`). Absent or 0: unpaced.
   */
  paceBytesPerSecond?: number
}

/** Which tenant entered a process's gates last, and when any other did: O(1) per request. */
export interface RecentTenants {
  saw: (tenant: string, now: number) => void
  /** Whether a tenant other than `tenant` entered within the window. */
  othersSince: (tenant: string, now: number) => boolean
}

export function recentTenants (windowMs: number): RecentTenants {
  let last: string | null = null
  let lastAt = -Infinity
  let otherAt = -Infinity // the latest entry of a tenant other than `last`
  return {
    saw: (tenant, now) => {
      if (tenant !== last) { otherAt = lastAt; last = tenant }
      lastAt = now
    },
    othersSince: (tenant, now) => (tenant === last ? otherAt : lastAt) > now - windowMs
  }
}

interface Waiter { req: RouteRequest, resolve: () => void, timer: NodeJS.Timeout }

/**
 * One tenant's slots in this process: how many are taken, who waits for one, oldest first, and
 * when it last released one. With a burst, also its time credit in ms (at most `creditMs`, below 0
 * when it owes), when that was last brought up to date, what one of its requests holds a slot for
 * (a moving average) and the start of each request holding one. With a pace, the bytes its
 * answers may still send at once (below 0 when they owe), and when that was brought up to date.
 */
interface Lane { active: number, queue: Waiter[], credit: number, at: number, estimate: number, started: Set<{ at: number }>, used: number, bytes: number, bytesAt: number }

// How fast the estimate follows a tenant's requests, and how long an idle tenant's lane is kept.
const FOLLOW = 0.25
const FORGET_MS = 30_000

/**
 * Per-tenant fairness (docs/behaviour.md "Per-tenant fairness"): a tenant has at most
 * `maxConcurrent` requests in flight in this process, from its token's check until its answer is
 * written (a stream's last byte), so one tenant's slow requests cannot hold every connection of the
 * shared pool. The others wait in the tenant's own FIFO queue, bounded in length and in time;
 * beyond either, 429 RATE_LIMITED with Retry-After. Under the limit it costs a Map lookup, a
 * counter, a clock read and the slot's start in a Set.
 *
 * With `burst`, the lane charges by time: it earns credit at `maxConcurrent` ms per ms, up to
 * `creditMs`, and each request pays the time it held a slot. While the credit covers the slots in
 * use (each counted at the longer of its time so far and the tenant's usual time) and one more,
 * a request is let in beside the others, up to `burst.slots`. A tenant whose requests are short
 * runs a few at once instead of queueing behind its own; one that keeps its lane busy earns only
 * what it spends, so once its long requests have spent the credit it owes and is held to
 * `maxConcurrent`. A tenant starts owing nothing and with no credit, its usual time the whole
 * credit, so it is let wider only once its requests have shown to be short.
 *
 * With `alone`, the lane is work-conserving: a tenant may hold up to `alone` slots while no other
 * tenant has entered the process's gates within `recent`'s window (a process serving one tenant
 * does not keep its cores idle); the lane's own rules apply again from the moment another does.
 *
 * With `paceBytesPerSecond`, a request let in while others are there has its answer charged to
 * the tenant's byte allowance, which refills at that rate up to one second's worth; once it is
 * spent the answer waits (exchange.ts `paced`), holding its slot. Occasional answers pass at once;
 * without it, a tenant with one slot could still take as many pages or tiles a second as the
 * machine can make, or a stream as fast as it can be produced.
 */
export function tenantGate (opts: TenantGateOptions): (req: RouteRequest) => Promise<void> | undefined {
  const lanes = new Map<string, Lane>()
  const burst = opts.burst !== undefined && opts.burst.slots > opts.maxConcurrent ? opts.burst : null
  const pace = opts.paceBytesPerSecond ?? 0
  // A lane that charges by time or bytes keeps an idle tenant's entry (what it owes, what it has
  // spent) until the sweep forgets it; a plain one drops it with the tenant's last slot.
  const keeps = burst !== null || pace > 0
  let swept = 0

  const refill = (lane: Lane, now: number): void => {
    if (burst === null) return
    lane.credit = Math.min(burst.creditMs, lane.credit + (now - lane.at) * opts.maxConcurrent)
    lane.at = now
  }
  const admits = (tenant: string, lane: Lane, now: number): boolean => {
    if (lane.active < opts.maxConcurrent) return true
    if (opts.alone !== undefined && lane.active < opts.alone && opts.recent?.othersSince(tenant, now) === false) return true
    if (burst === null || lane.active >= burst.slots) return false
    refill(lane, now)
    let owed = lane.estimate
    for (const s of lane.started) owed += Math.max(now - s.at, lane.estimate)
    return lane.credit > owed
  }
  const take = (tenant: string, lane: Lane, req: RouteRequest, now: number): void => {
    lane.active++
    const slot = { at: now }
    lane.started.add(slot)
    req.state.release = releaser(tenant, lane, slot, req.state.release)
    if (pace > 0 && opts.recent?.othersSince(tenant, now) !== false) req.state.pace = bytes => charge(lane, bytes)
  }
  // Takes `bytes` from the tenant's allowance; the ms until it is back to zero, if it owes.
  const charge = (lane: Lane, bytes: number): number => {
    const now = performance.now()
    lane.bytes = Math.min(pace, lane.bytes + (now - lane.bytesAt) * pace / 1000) - bytes
    lane.bytesAt = now
    return lane.bytes >= 0 ? 0 : -lane.bytes * 1000 / pace
  }
  // Gives back a slot and lets in whoever now fits, oldest first. An idle tenant leaves no entry
  // behind, unless the lane `keeps` it (what it owes is not forgotten) until the sweep finds it
  // idle for FORGET_MS and out of debt.
  const release = (tenant: string, lane: Lane, slot: { at: number }): void => {
    const now = performance.now()
    lane.active--
    lane.started.delete(slot)
    if (burst !== null) {
      refill(lane, now)
      // What it owes is bounded by one credit: the estimate, not the debt, keeps a tenant whose
      // requests are long to its slot, and slots held while alone are not held against it later.
      lane.credit = Math.max(-burst.creditMs, lane.credit - (now - slot.at))
      lane.estimate += FOLLOW * (now - slot.at - lane.estimate)
    }
    lane.used = now
    while (lane.queue.length > 0 && admits(tenant, lane, now)) {
      const next = lane.queue.shift()!
      clearTimeout(next.timer)
      take(tenant, lane, next.req, now)
      next.resolve()
    }
    if (!keeps && lane.active === 0) lanes.delete(tenant)
  }
  const sweep = (now: number): void => {
    if (!keeps || now - swept < FORGET_MS) return
    swept = now
    for (const [tenant, lane] of lanes) {
      refill(lane, now)
      if (lane.active === 0 && now - lane.used > FORGET_MS && lane.credit >= 0) lanes.delete(tenant)
    }
  }
  // Idempotent: exchange calls it once the answer is written, and again if writing threw. Each
  // release gives back its own slot and calls whatever was held before it (the routes hold one
  // gate's slot at a time: a rendering trades the tenant's for the heavy lane's, http/guards.ts).
  const releaser = (tenant: string, lane: Lane, slot: { at: number }, held: (() => void) | undefined): () => void => {
    let holding = true
    return () => { if (holding) { holding = false; release(tenant, lane, slot) } held?.() }
  }

  return req => {
    const tenant = req.service.tenantId
    const now = performance.now()
    sweep(now)
    opts.recent?.saw(tenant, now)
    let lane = lanes.get(tenant)
    if (lane === undefined) lanes.set(tenant, lane = { active: 0, queue: [], credit: 0, at: now, estimate: burst?.creditMs ?? 0, started: new Set(), used: now, bytes: pace, bytesAt: now })
    if (lane.queue.length === 0 && admits(tenant, lane, now)) {
      take(tenant, lane, req, now)
      return undefined
    }
    if (lane.queue.length >= opts.maxQueued) throw busy(req, opts, 'queue is full')
    const queue = lane.queue
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        req,
        resolve,
        timer: setTimeout(() => {
          const i = queue.indexOf(waiter)
          if (i === -1) return // handed a slot in the same turn
          queue.splice(i, 1)
          reject(busy(req, opts, `waited ${opts.maxWaitMs} ms`))
        }, opts.maxWaitMs)
      }
      queue.push(waiter)
    })
  }
}

function busy (req: RouteRequest, opts: TenantGateOptions, why: string): AppError {
  req.answerHeaders['Retry-After'] = '1'
  const kind = opts.kind ?? 'requests'
  return new AppError('RATE_LIMITED', `too many ${kind} of this tenant in progress (${opts.maxConcurrent} at once, ${why}); retry in 1 s`, {
    retryAfterSeconds: 1, reason: kind === 'requests' ? 'tenant concurrency' : `tenant concurrency (${kind})`, maxConcurrent: opts.maxConcurrent
  })
}
