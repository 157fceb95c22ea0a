import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

// One registry per process, shared by server and worker. Domain counters live here so lib can
// count without knowing about HTTP.
export const registry = new Registry()
collectDefaultMetrics({ register: registry })
// prom-client names three gauges *_total, a suffix Prometheus keeps for counters (`promtool check
// metrics` fails on them); each only sums the by-type gauge of the same name without the suffix.
for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name)

export const httpRequestsTotal = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry]
})

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request duration in seconds, by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry]
})

export const dbQueryDuration = new Histogram({
  name: 'database_query_duration_seconds',
  help: 'Database query duration in seconds, by statement kind',
  labelNames: ['operation'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  registers: [registry]
})

export const workflowTransitionsTotal = new Counter({
  name: 'workflow_transitions_total',
  help: 'Workflow transitions performed, by workflow and target state',
  labelNames: ['workflow_id', 'state'] as const,
  registers: [registry]
})

export const licenseLimitExceededTotal = new Counter({
  name: 'license_limit_exceeded_total',
  help: 'Writes refused because a license limit was reached',
  labelNames: ['limit_code'] as const,
  registers: [registry]
})

export const automationRulesExecutedTotal = new Counter({
  name: 'automation_rules_executed_total',
  help: 'Automation rule runs executed',
  labelNames: ['rule_id'] as const,
  registers: [registry]
})

export const outboxDeliveryFailuresTotal = new Counter({
  name: 'outbox_delivery_failures_total',
  help: 'Outbox event deliveries that failed (the event is retried after a growing delay), by event type',
  labelNames: ['type'] as const,
  registers: [registry]
})

export const webhookAttemptsTotal = new Counter({
  name: 'webhook_attempts_total',
  help: 'Outgoing webhook attempts (automation webhook effects), by outcome: 2xx, 3xx, 4xx, 5xx, timeout, connection_error (reset, refused by the receiver), blocked (refused before sending: private address, no DNS answer)',
  labelNames: ['outcome'] as const,
  registers: [registry]
})

export const renderCacheLookupsTotal = new Counter({
  name: 'render_cache_lookups_total',
  help: 'Lookups in the render cache of layer exports, by export kind (mvt = vector tiles, geojson, tilejson, ogc-items...) and result (hit, miss)',
  labelNames: ['kind', 'result'] as const,
  registers: [registry]
})

export const jobRunSeconds = new Histogram({
  name: 'job_run_seconds',
  help: 'Seconds from a worker taking a job to its handler finishing, per queue (the jobs of one batch finish together)',
  labelNames: ['queue'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [registry]
})
