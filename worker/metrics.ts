import http from 'node:http'
import { createHash, timingSafeEqual } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { jobRunSeconds, registry } from '../lib/metrics.js'
import type { Logger } from '../lib/log.js'

// A worker's own /metrics (WORKER_METRICS_PORT). What a worker counts in process, such as
// workflow_transitions_total for transitions applied by automation runs, job_run_seconds and
// webhook_attempts_total, exists only here;
// Prometheus scrapes every worker and API process and sums across them. Fleet-wide figures read
// from the database (job_queue_*, job_latency_seconds, outbox_*, automation_rules_executed_total) stay
// on the API's /metrics so they are not reported once per worker.

const digest = (s: string) => createHash('sha256').update(s).digest()

function authorized (req: http.IncomingMessage, token: string | null): boolean {
  if (token === null) return true
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')
  return m !== null && timingSafeEqual(digest(m[1]), digest(token))
}

/** Serves GET /metrics on `port` (0: any free port); Bearer `token` when one is configured. */
export async function serveWorkerMetrics (port: number, token: string | null, log: Logger): Promise<{ port: number, close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') { res.writeHead(404).end(); return }
    if (!authorized(req, token)) { res.writeHead(401, { 'WWW-Authenticate': 'Bearer' }).end(); return }
    registry.metrics().then(
      text => { res.writeHead(200, { 'Content-Type': registry.contentType }).end(text) },
      err => { log.error({ err }, 'metrics failed'); res.writeHead(500).end() })
  })
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, resolve))
  const bound = (server.address() as AddressInfo).port
  log.info({ port: bound }, 'worker metrics listening')
  return { port: bound, close: () => new Promise<void>(resolve => { server.closeAllConnections(); server.close(() => resolve()) }) }
}

/**
 * `handler` observed in job_run_seconds{queue}: once per job of each batch, with the batch's time
 * (pg-boss completes or fails a batch's jobs together), whether it resolved or threw.
 */
export function timed<J, R> (queue: string, handler: (batch: J[]) => Promise<R>): (batch: J[]) => Promise<R> {
  return async batch => {
    const t0 = performance.now()
    try {
      return await handler(batch)
    } finally {
      const seconds = (performance.now() - t0) / 1000
      for (let i = 0; i < batch.length; i++) jobRunSeconds.observe({ queue }, seconds)
    }
  }
}
