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
}

interface Waiter { req: RouteRequest, resolve: () => void, timer: NodeJS.Timeout }
/** One tenant's slots in this process: how many are taken, and who waits for one, oldest first. */
interface Lane { active: number, queue: Waiter[] }

/**
 * Per-tenant fairness (docs/behaviour.md "Platform"): a tenant has at most `maxConcurrent`
 * requests in flight in this process, from its token's check until its answer is written (a
 * stream's last byte), so one tenant's slow requests cannot hold every connection of the shared
 * pool. The others wait in the tenant's own FIFO queue, bounded in length and in time; beyond
 * either, 429 RATE_LIMITED with Retry-After. Under the limit it costs a Map lookup and a counter.
 */
export function tenantGate (opts: TenantGateOptions): (req: RouteRequest) => Promise<void> | undefined {
  const lanes = new Map<string, Lane>()

  // Hands the slot to the oldest waiter, or frees it; an idle tenant leaves no entry behind.
  const release = (tenant: string, lane: Lane): void => {
    const next = lane.queue.shift()
    if (next !== undefined) {
      clearTimeout(next.timer)
      next.req.state.release = releaser(tenant, lane, next.req.state.release)
      next.resolve()
    } else if (--lane.active === 0) lanes.delete(tenant)
  }
  // Idempotent: exchange calls it once the answer is written, and again if writing threw. Each
  // release gives back its own slot and calls whatever was held before it (the routes hold one
  // gate's slot at a time: a rendering trades the tenant's for the heavy lane's, http/guards.ts).
  const releaser = (tenant: string, lane: Lane, held: (() => void) | undefined): () => void => {
    let holding = true
    return () => { if (holding) { holding = false; release(tenant, lane) } held?.() }
  }

  return req => {
    const tenant = req.service.tenantId
    let lane = lanes.get(tenant)
    if (lane === undefined) lanes.set(tenant, lane = { active: 0, queue: [] })
    if (lane.active < opts.maxConcurrent) {
      lane.active++
      req.state.release = releaser(tenant, lane, req.state.release)
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
