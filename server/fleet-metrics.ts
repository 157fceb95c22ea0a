import { Gauge, Histogram } from 'prom-client'
import { automationRulesExecutedTotal, registry } from '../lib/metrics.js'
import { executionCounts } from '../lib/automation/index.js'
import type { Db } from '../lib/db.js'
import * as outbox from '../lib/outbox/index.js'
import * as queues from '../lib/queues/index.js'

// What an operator scales the worker fleet by, read from pg-boss's tables and the outbox at scrape
// time by the process that serves /metrics (the API), so the figures cover the whole fleet: jobs
// waiting per queue and state and the oldest one's age, jobs failed for good, how long jobs waited
// between being due and a worker starting them, and the outbox's backlog. Every API process
// reports the same fleet-wide figures: aggregate them with max, not sum (deploy/prometheus).

let source: Db | null = null
let since = new Date()

/** The pool the collectors read through (the API calls this once with its pool). */
export function watchQueues (db: Db): void {
  source = db
  snapshot = null
}

const names = () => queues.QUEUES.map(q => q.name)

// One read of the tables serves every gauge of a scrape, and scrapes within SNAPSHOT_MS of it
// (several Prometheus replicas, a dashboard's refresh) share it; a failed read reports nothing.
const SNAPSHOT_MS = 5000
interface Snapshot { depth: queues.DepthRow[], failed: queues.FailedRow[], outbox: outbox.Backlog }
let snapshot: { at: number, db: Db, value: Promise<Snapshot | null> } | null = null

function fleetSnapshot (db: Db): Promise<Snapshot | null> {
  if (snapshot === null || snapshot.db !== db || performance.now() - snapshot.at > SNAPSHOT_MS) {
    const value = Promise.all([queues.depth(db, names()), queues.failedKept(db, names()), outbox.backlog(db)])
      .then(([depth, failed, backlog]) => ({ depth, failed, outbox: backlog }), () => null)
    snapshot = { at: performance.now(), db, value }
  }
  return snapshot.value
}

/** A gauge set from the fleet snapshot at each scrape (left as it was when the read fails). */
function fleetGauge<L extends string> (name: string, help: string, labelNames: readonly L[], fill: (g: Gauge<L>, s: Snapshot) => void): Gauge<L> {
  return new Gauge<L>({
    name, help, labelNames, registers: [registry],
    async collect () {
      const s = source === null ? null : await fleetSnapshot(source)
      if (s === null) return
      this.reset()
      fill(this, s)
    }
  })
}

const WAITING_STATES = ['created', 'retry', 'active']

export const jobQueueDepth = fleetGauge('job_queue_depth',
  'Jobs not finished yet, per queue and state (created = waiting, retry = waiting to retry, active = running)', ['queue', 'state'],
  (g, s) => {
    for (const q of names()) for (const state of WAITING_STATES) g.set({ queue: q, state }, 0)
    for (const row of s.depth) g.set({ queue: row.name, state: row.state }, row.n)
  })

export const jobQueueOldest = fleetGauge('job_queue_oldest_seconds',
  'Seconds the longest-waiting due job of each queue has waited for a worker (states created and retry; 0 when none waits)', ['queue'],
  (g, s) => {
    const oldest = new Map(names().map(q => [q, 0]))
    for (const row of s.depth) if (row.state !== 'active') oldest.set(row.name, Math.max(oldest.get(row.name) ?? 0, row.oldest_s))
    for (const [queue, seconds] of oldest) g.set({ queue }, seconds)
  })

export const jobQueueFailed = fleetGauge('job_queue_failed',
  'Jobs that failed for good (retries exhausted) and are still kept (pg-boss retention), per queue: dead letters; refreshed by a worker about once a minute', ['queue'],
  (g, s) => {
    for (const q of names()) g.set({ queue: q }, 0)
    for (const row of s.failed) g.set({ queue: row.name }, row.n)
  })

export const outboxPending = fleetGauge('outbox_pending_events', 'Outbox events not delivered yet (every tenant)', [],
  (g, s) => { g.set(s.outbox.pending) })

export const outboxLag = fleetGauge('outbox_lag_seconds', 'Age in seconds of the oldest undelivered outbox event (0 when none is pending)', [],
  (g, s) => { g.set(s.outbox.oldestSeconds) })

// Outbox events whose delivery failed and that are not delivered yet: `waiting` for their next
// attempt (growing delay, lib/outbox), or `due` again. The failures themselves are counted where
// they happen (outbox_delivery_failures_total, worker /metrics).
export const outboxEventsRetrying = fleetGauge('outbox_events_retrying',
  'Undelivered outbox events whose last delivery failed, by state (waiting = held back until their next attempt, due = to be retried now)', ['state'],
  (g, s) => {
    g.set({ state: 'waiting' }, s.outbox.waiting)
    g.set({ state: 'due' }, s.outbox.due)
  })

export const jobLatency = new Histogram({
  name: 'job_latency_seconds',
  help: 'Seconds from a job being due (created, or its startAfter) to a worker starting it, for jobs started since the previous scrape',
  labelNames: ['queue'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
  registers: [registry],
  async collect () {
    if (source === null) return
    const from = since
    const rows = await queues.startedSince(source, names(), from).catch(() => null)
    if (rows === null) return
    for (const row of rows) {
      this.observe({ queue: row.name }, Math.max(0, row.s))
      if (row.started_on > since) since = row.started_on
    }
  }
})

// automation_rules_executed_total{rule_id}: runs finish in workers, so the API reads the counts
// each run's transaction keeps (automation_rule_stats). The counter is declared in lib/metrics.ts;
// prom-client calls a metric's `collect` before each exposition (typed only as a constructor option).
;(automationRulesExecutedTotal as unknown as { collect: (this: typeof automationRulesExecutedTotal) => Promise<void> }).collect = async function () {
  if (source === null) return
  const rows = await executionCounts(source).catch(() => null)
  if (rows === null) return
  this.reset()
  for (const r of rows) this.inc({ rule_id: r.rule_id }, Number(r.executed))
}
