import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

// One registry per process, shared by server and worker. Domain counters live here so lib can
// count without knowing about HTTP.
export const registry = new Registry()
collectDefaultMetrics({ register: registry })

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
  labelNames: ['workflowId', 'state'] as const,
  registers: [registry]
})

export const licenseLimitExceededTotal = new Counter({
  name: 'license_limit_exceeded_total',
  help: 'Writes refused because a license limit was reached',
  labelNames: ['limitCode'] as const,
  registers: [registry]
})

export const automationRulesExecutedTotal = new Counter({
  name: 'automation_rules_executed_total',
  help: 'Automation rule runs executed',
  labelNames: ['ruleId'] as const,
  registers: [registry]
})

export const outboxDeliveryFailuresTotal = new Counter({
  name: 'outbox_delivery_failures_total',
  help: 'Outbox event deliveries that failed (the event is retried after a growing delay), by event type',
  labelNames: ['type'] as const,
  registers: [registry]
})
