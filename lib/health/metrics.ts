import { Gauge } from 'prom-client'
import type { Config } from '../config.js'
import { poolCounts, type Db } from '../db.js'
import { environmentLicense } from '../license/status.js'
import { registry } from '../metrics.js'
import { readiness } from './index.js'

// The health of this one process, on its own /metrics (API and worker alike): readiness as the
// probe would answer, its database pool, and when the environment's license expires.

let watched: { db: Db, config: Readonly<Config> } | null = null

/** The pool and configuration the gauges read (each process's composition root calls this once). */
export function watchProcess (db: Db, config: Readonly<Config>): void {
  watched = { db, config }
}

export const serviceReady = new Gauge({
  name: 'service_ready',
  help: '1 when this process would answer /v1/health/ready with 200 (database answers, release matches, license verifies), else 0',
  registers: [registry],
  async collect () {
    if (watched === null) return
    this.set((await readiness(watched.db, watched.config)).ready ? 1 : 0)
  }
})

export const dbPoolConnections = new Gauge({
  name: 'db_pool_connections',
  help: "This process's database pool connections, by state (in_use = lent to a query or transaction, idle)",
  labelNames: ['state'] as const,
  registers: [registry],
  collect () {
    if (watched === null) return
    const c = poolCounts(watched.db)
    this.set({ state: 'in_use' }, c.used)
    this.set({ state: 'idle' }, c.idle)
  }
})

export const dbPoolWaiting = new Gauge({
  name: 'db_pool_waiting',
  help: 'Callers of this process waiting for a database pool connection (the pool is exhausted while above 0)',
  registers: [registry],
  collect () {
    if (watched !== null) this.set(poolCounts(watched.db).waiting)
  }
})

// Labelled so that it can be absent: without LICENSE_KEY, when the key does not verify (service_ready
// reports that) or when it never expires. Tenants' installed licenses are not read here (sealed per tenant).
export const licenseExpiry = new Gauge({
  name: 'license_expiry_timestamp_seconds',
  help: 'When the configured license expires, in Unix seconds, by source (LICENSE_KEY); absent when none is set or it has no expiry',
  labelNames: ['source'] as const,
  registers: [registry],
  collect () {
    this.reset()
    const expiresAt = watched === null ? null : environmentLicense(watched.config.license)?.expiresAt ?? null
    if (expiresAt !== null) this.set({ source: 'LICENSE_KEY' }, expiresAt.getTime() / 1000)
  }
})
