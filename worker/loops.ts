import type { Job, PgBoss } from 'pg-boss'

// Fetch loops that keep pace with a backlog and rest when there is none. pg-boss's own loop waits
// out its polling interval after every fetch that did not come back as a full batch: with one job
// per fetch (webhook deliveries), that caps a worker at one job per loop and interval however fast
// the receivers answer, while an idle worker still fetches at that rate.

export interface LoopOptions {
  /** Fetch loops, each a pg-boss registration of its own (so that each can be woken alone). */
  loops: number
  /** Jobs per fetch; the handler gets them as one batch. */
  batchSize: number
  /** How often a resting process looks for work: one resting loop is woken this often. */
  pollSeconds: number
  /** pg-boss's own polling interval of every loop: only a backstop (at least 0.5). */
  restSeconds: number
}

export interface Loops {
  /** The loops' pg-boss worker ids (for offWork). */
  ids: string[]
  /** Wakes one resting loop now (work was queued by this process); it brings in the others. */
  wake: () => void
  /** Stops the poll timer (pg-boss stops the loops themselves). */
  stop: () => void
}

/**
 * `options.loops` fetch loops on `queue`:
 * - a loop that got work fetches again as soon as its batch is handled, without waiting;
 * - as it starts a batch it wakes one resting loop, so a backlog draws the loops in one by one
 *   and a single job costs one extra fetch at most;
 * - every `pollSeconds` the first loop not at work is woken: an idle process fetches as often
 *   as one loop polling would, a loop is still looking while others are held by slow work (a
 *   receiver taking its 30 s), and the resting ones wait for work or their long backstop.
 * A loop that finds nothing rests again. Returns the loops' ids, a wake and the timer's stop.
 */
export async function workInLoops<T extends object> (boss: PgBoss, queue: string, options: LoopOptions, handler: (batch: Array<Job<T>>) => Promise<void>): Promise<Loops> {
  const ids: string[] = []
  const busy = new Set<string>()
  const wakeOne = (except?: string): void => {
    const id = ids.find(x => x !== except && !busy.has(x))
    if (id !== undefined) boss.notifyWorker(id)
  }
  for (let i = 0; i < options.loops; i++) {
    let id = ''
    id = await boss.work<T>(queue, {
      batchSize: options.batchSize, localConcurrency: 1, pollingIntervalSeconds: options.restSeconds
    }, async batch => {
      busy.add(id)
      wakeOne(id)
      try {
        await handler(batch)
      } finally {
        busy.delete(id)
        boss.notifyWorker(id)
      }
    })
    ids.push(id)
  }
  const timer = setInterval(() => { wakeOne() }, options.pollSeconds * 1000)
  timer.unref()
  return { ids, wake: () => { wakeOne() }, stop: () => { clearInterval(timer) } }
}
