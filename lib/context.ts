import type { Config } from './config.js'
import type { Db, Queryable, Statement } from './db.js'
import type { Logger } from './log.js'
import type { Permissions } from './access/grants.js'
import type { WriteHooks } from './pipeline.js'

export interface Actor {
  sub: string
  roles: string[]
}

/** Sends a typed job, inside `db`'s transaction when it is one (so a rollback enqueues nothing). */
export interface JobSender {
  send (queue: string, payload: object, opts: { db: Queryable, singletonKey?: string, startAfterSeconds?: number }): Promise<void>
  /** Several jobs of one queue in one statement (absent: one `send` each). */
  sendMany? (queue: string, payloads: object[], opts: { db: Queryable }): Promise<void>
  /**
   * `guard` (a data-modifying statement with RETURNING) and, when it returns a row, one job, as ONE
   * statement on the pool (autocommit: both or neither, in one round trip). Returns the guard's
   * rows. Absent: the caller runs the guard and `send` in a transaction.
   */
  sendGuarded? (db: Queryable, queue: string, payload: object, guard: Statement & { name: string }): Promise<any[]>
}

/** Sequences a tenant's pending audit events soon after a commit (lib/audit Sequencer). */
export interface AuditKicker {
  kick (tenantId: string): Promise<void>
}

/**
 * How modules reach modules that depend on them (a lower module cannot import a higher one): built
 * once per process by its composition root (lib/modules.ts `wireModules`, called from main.ts)
 * and carried by every ServiceContext.
 */
export interface ModuleHooks {
  /** lib/pipeline: what lib/license adds to every write (expiry, monthly usage, quotas). */
  write: WriteHooks
  /** lib/queries: before each query run (lib/license counts query_count). */
  beforeQueryRun: (ctx: ServiceContext) => Promise<void>
  /** lib/automation: before the ingress accepts a call and before a run applies anything (lib/license's automation switch). */
  automationGate: (ctx: ServiceContext) => Promise<void>
  /** lib/objects: the state a new object of a workflow starts in (lib/workflows). */
  initialState: (ctx: ServiceContext, db: Queryable, workflowId: string) => Promise<string | null>
  /** lib/object-types: whether a type may name this workflow (lib/workflows). */
  workflowExists: (ctx: ServiceContext, db: Queryable, workflowId: string) => Promise<boolean>
  /** lib/access: a refusal written to the caller's audit chain, outside its transaction (lib/audit). */
  recordRefusal: (ctx: ServiceContext, event: RefusalEvent) => Promise<void>
}

/** An audit event of a refusal (permission.denied, license.limit_exceeded, ...). */
export interface RefusalEvent { type: string, resourceType: string, resourceId: string | null, data: Record<string, unknown> }

/**
 * What every lib operation receives. Built per request by the server, per job by the worker.
 * `db` is the pool; operations open their own transactions through lib/pipeline or withTransaction.
 */
export interface ServiceContext {
  tenantId: string
  actor: Actor
  scope: string | null
  permissions: Permissions
  requestId: string
  log: Logger
  db: Db
  config: Readonly<Config>
  jobs: JobSender | null
  sequencer: AuditKicker | null
  hooks: ModuleHooks
  /** Set while an automation run applies its effect: stamped on the domain events it causes (loop guard). */
  causation?: Causation
  /**
   * A write nested in a caller's transaction may hand its audit, outbox and counter rows to that
   * transaction's next folded write by the same actor (lib/pipeline): an automation run's effect,
   * whose rows then go in one statement with the run's outcome.
   */
  deferChanges?: boolean
  /**
   * Set for a request whose statements of caller-chosen cost share one QUERY_STATEMENT_TIMEOUT_MS
   * (lib/db withCallerCost), a GraphQL request's root fields, which run in turn: `deadline` is the
   * performance.now() by which they must end, counted from the first (null until it starts, so a
   * wait for the heavy lane spends none of it).
   */
  sharedCost?: { deadline: number | null }
  /**
   * Set by the server for a route whose rendering is heavy (RouteSpec.heavy 'render'): waits for a
   * slot of the tenant's heavy lane (TENANT_MAX_CONCURRENT_HEAVY_REQUESTS) when the rendering
   * starts (lib/layers `cached`, on a miss), in place of the tenant's general slot, and holds it
   * until the answer is written; later calls return the same wait. An answer from the render
   * cache, a 304 or a refused parameter takes no heavy slot. Absent: no lane to enter here (jobs,
   * light routes, and heavy requests that entered theirs before anything else).
   */
  heavyLane?: () => Promise<void> | undefined
}

export interface Causation { depth: number, ruleId: string, runId: string }
