import { Gauge, Histogram } from 'prom-client'
import { automationRulesExecutedTotal, registry } from '../lib/metrics.js'
import { executionCounts } from '../lib/automation/index.js'
import type { Db } from '../lib/db.js'
import * as outbox from '../lib/outbox/index.js'
import * as queues from '../lib/queues/index.js'

// What an operator scales the worker fleet by, read from pg-boss's tables at scrape time by the
// process that serves /metrics (the API; workers have no port), so the figures cover the whole
// fleet: jobs waiting per queue and state, and how long jobs waited between being due and a
// worker starting them.

let source: Db | null = null
let since = new Date()

/** The pool the collectors read through (the API calls this once with its pool). */
export function watchQueues (db: Db): void {
  source = db
}

const names = () => queues.QUEUES.map(q => q.name)

export const jobQueueDepth = new Gauge({
  name: 'job_queue_depth',
  help: 'Jobs not finished yet, per queue and state (created = waiting, retry = waiting to retry, active = running)',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
  async collect () {
    if (source === null) return
    const rows = await queues.depth(source, names()).catch(() => null)
    if (rows === null) return
    this.reset()
    for (const q of names()) for (const st of ['created', 'retry', 'active']) this.set({ queue: q, state: st }, 0)
    for (const row of rows) this.set({ queue: row.name, state: row.state }, row.n)
  }
})

// Outbox events whose delivery failed and that are not delivered yet (fleet-wide, from the table):
// `waiting` for their next attempt (growing delay, lib/outbox), or `due` again. The failures
// themselves are counted where they happen (outbox_delivery_failures_total, worker /metrics).
export const outboxEventsRetrying = new Gauge({
  name: 'outbox_events_retrying',
  help: 'Undelivered outbox events whose last delivery failed, by state (waiting = held back until their next attempt, due = to be retried now)',
  labelNames: ['state'] as const,
  registers: [registry],
  async collect () {
    if (source === null) return
    const r = await outbox.countRetrying(source).catch(() => null)
    if (r === null) return
    this.set({ state: 'waiting' }, r.waiting)
    this.set({ state: 'due' }, r.due)
  }
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

// automation_rules_executed_total{ruleId}: runs finish in workers, so the API reads the counts
// each run's transaction keeps (automation_rule_stats). The counter is declared in lib/metrics.ts;
// prom-client calls a metric's `collect` before each exposition (typed only as a constructor option).
;(automationRulesExecutedTotal as unknown as { collect: (this: typeof automationRulesExecutedTotal) => Promise<void> }).collect = async function () {
  if (source === null) return
  const rows = await executionCounts(source).catch(() => null)
  if (rows === null) return
  this.reset()
  for (const r of rows) this.inc({ ruleId: r.rule_id }, Number(r.executed))
}
