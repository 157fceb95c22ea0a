import { prepared, statementName, type Bindings, type Queryable, type Tx } from '../db.js'
import type { FoldedStatement } from '../pipeline.js'
import type { RuleContent } from './definition.js'

// Every statement of lib/automation. Tables: automation_rules, automation_rule_versions,
// automation_runs (migration 202611230100_create_automation). Every query filters by tenant.

export type RuleStatus = 'draft' | 'sandbox' | 'active'
export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped' | 'dry_run'

export interface RuleRow {
  tenant_id: string
  id: string
  status: RuleStatus
  latest_version: number
  live_version: number | null
  slug: string | null
  live_slug: string | null
  token_hash: string | null
  signing_secret: string | null
  actor_roles: string[]
  created_at: Date
  updated_at: Date
}

export type RuleWithContent = RuleRow & { latest_status: RuleStatus, latest_content: RuleContent, live_content: RuleContent | null }

const WITH_CONTENT = `
  SELECT r.*, lv.status AS latest_status, lv.definition AS latest_content, pv.definition AS live_content
  FROM automation_rules r
  JOIN automation_rule_versions lv ON lv.tenant_id = r.tenant_id AND lv.rule_id = r.id AND lv.version = r.latest_version
  LEFT JOIN automation_rule_versions pv ON pv.tenant_id = r.tenant_id AND pv.rule_id = r.id AND pv.version = r.live_version`

export async function findRule (db: Queryable, tenantId: string, id: string, lock = false): Promise<RuleWithContent | null> {
  const r = await db.raw(`${WITH_CONTENT} WHERE r.tenant_id = ? AND r.id = ? AND r.deleted_at IS NULL${lock ? ' FOR UPDATE OF r' : ''}`, [tenantId, id])
  return r.rows[0] ?? null
}

export interface RuleFilter { limit: number, offset: number, status?: RuleStatus }

/** Relies on automation_rules_tenant_created for the order. */
export async function listRules (db: Queryable, tenantId: string, f: RuleFilter): Promise<{ rows: RuleWithContent[], total: number }> {
  const where = ['r.tenant_id = ?', 'r.deleted_at IS NULL']
  const params: Bindings = [tenantId]
  if (f.status !== undefined) { where.push('r.status = ?'); params.push(f.status) }
  const cond = where.join(' AND ')
  const [rows, count] = await Promise.all([
    db.raw(`${WITH_CONTENT} WHERE ${cond} ORDER BY r.created_at, r.id LIMIT ? OFFSET ?`, [...params, f.limit, f.offset]),
    db.raw(`SELECT count(*)::int AS n FROM automation_rules r WHERE ${cond}`, params)
  ])
  return { rows: rows.rows, total: count.rows[0].n }
}

export async function insertRule (tx: Tx, tenantId: string, r: { slug: string | null, token_hash: string | null, signing_secret: string | null }): Promise<RuleRow> {
  const [row] = await tx('automation_rules').insert({ tenant_id: tenantId, ...r }).returning('*')
  return row
}

export async function updateRule (tx: Tx, tenantId: string, id: string, patch: Partial<Omit<RuleRow, 'tenant_id' | 'id' | 'created_at' | 'updated_at'>> & { deleted_at?: unknown }): Promise<void> {
  await tx('automation_rules').where({ tenant_id: tenantId, id }).update({ ...patch, updated_at: tx.raw("date_trunc('milliseconds', now())") })
}

export async function insertVersion (tx: Tx, tenantId: string, ruleId: string, version: number, content: RuleContent, createdBy: string): Promise<void> {
  await tx('automation_rule_versions').insert({ tenant_id: tenantId, rule_id: ruleId, version, definition: JSON.stringify(content), created_by: createdBy })
}

export async function updateVersionContent (tx: Tx, tenantId: string, ruleId: string, version: number, content: RuleContent): Promise<void> {
  await tx('automation_rule_versions').where({ tenant_id: tenantId, rule_id: ruleId, version }).update({ definition: JSON.stringify(content) })
}

/** Stamps the step: publishing straight to active records sandbox_at too. */
export async function setVersionStatus (tx: Tx, tenantId: string, ruleId: string, version: number, status: 'sandbox' | 'active'): Promise<void> {
  const now = "date_trunc('milliseconds', now())"
  await tx('automation_rule_versions').where({ tenant_id: tenantId, rule_id: ruleId, version }).update({
    status,
    // least(), not coalesce(): Citus refuses a non-IMMUTABLE function inside COALESCE in an UPDATE.
    sandbox_at: tx.raw(`least(sandbox_at, ${now})`),
    ...(status === 'active' ? { published_at: tx.raw(now) } : {})
  })
}

export interface VersionRow { version: number, status: RuleStatus, definition: RuleContent, created_at: Date, created_by: string | null, sandbox_at: Date | null, published_at: Date | null }

export async function listVersions (db: Queryable, tenantId: string, ruleId: string): Promise<VersionRow[]> {
  return db('automation_rule_versions').where({ tenant_id: tenantId, rule_id: ruleId }).orderBy('version').select('*')
}

export interface LiveRule { id: string, status: 'sandbox' | 'active', live_version: number, live_content: RuleContent, actor_roles: string[], signing_secret: string | null }

/** Every live rule of the tenant with an object-event trigger (index automation_rules_tenant_live). */
export async function liveEventRules (db: Queryable, tenantId: string): Promise<LiveRule[]> {
  const r = await prepared(db, 'automation.live-event-rules', `
    SELECT r.id, r.status, r.live_version, v.definition AS live_content, r.actor_roles, r.signing_secret
    FROM automation_rules r
    JOIN automation_rule_versions v ON v.tenant_id = r.tenant_id AND v.rule_id = r.id AND v.version = r.live_version
    WHERE r.tenant_id = ? AND r.deleted_at IS NULL AND r.status <> 'draft'
      AND v.definition->'trigger'->>'type' = 'object.event'`, [tenantId])
  return r.rows
}

export interface NewRun {
  rule_id: string
  rule_version: number
  trigger: Record<string, unknown>
  trigger_key: string
  depth: number
  input: unknown
  replay_of?: string | null
}

/** Inserts a queued run unless one exists for the same trigger key; returns its id and whether it is new. */
export async function insertRun (tx: Tx, tenantId: string, run: NewRun): Promise<{ id: string, created: boolean }> {
  const r = await prepared(tx, 'automation.insert-run', `
    WITH ins AS (
      INSERT INTO automation_runs (tenant_id, rule_id, rule_version, trigger, trigger_key, depth, input, replay_of)
      VALUES (?, ?, ?, ?::jsonb, ?, ?, ?::jsonb, ?)
      ON CONFLICT (tenant_id, rule_id, trigger_key) DO NOTHING
      RETURNING id)
    SELECT id, true AS created FROM ins
    UNION ALL
    SELECT id, false FROM automation_runs WHERE tenant_id = ? AND rule_id = ? AND trigger_key = ? AND NOT EXISTS (SELECT 1 FROM ins)`,
  [tenantId, run.rule_id, run.rule_version, JSON.stringify(run.trigger), run.trigger_key, run.depth, JSON.stringify(run.input ?? null), run.replay_of ?? null,
    tenantId, run.rule_id, run.trigger_key])
  return r.rows[0]
}

/**
 * A queued run with the given id, unless its rule has one for the trigger key: a statement
 * returning the id when it inserted (the ingress folds its job's insert into it).
 */
export function insertRunStatement (tenantId: string, id: string, run: NewRun): { sql: string, bindings: Bindings, name: string } {
  return {
    name: 'automation.insert-run-with-id',
    sql: `INSERT INTO automation_runs (tenant_id, id, rule_id, rule_version, trigger, trigger_key, depth, input, replay_of)
      VALUES (?, ?, ?, ?, ?::jsonb, ?, ?, ?::jsonb, ?)
      ON CONFLICT (tenant_id, rule_id, trigger_key) DO NOTHING
      RETURNING id`,
    bindings: [tenantId, id, run.rule_id, run.rule_version, JSON.stringify(run.trigger), run.trigger_key, run.depth, JSON.stringify(run.input ?? null), run.replay_of ?? null]
  }
}

/** The run a rule has for a trigger key. */
export async function runIdByKey (db: Queryable, tenantId: string, ruleId: string, key: string): Promise<string | null> {
  const r = await db.raw('SELECT id FROM automation_runs WHERE tenant_id = ? AND rule_id = ? AND trigger_key = ?', [tenantId, ruleId, key])
  return r.rows[0]?.id ?? null
}

/**
 * Inserts queued runs of one tenant in the given order, one statement; a run whose trigger key
 * its rule already has is left out. Returns the ids of the runs it created, in order.
 */
export async function insertRuns (tx: Tx, tenantId: string, runs: NewRun[]): Promise<string[]> {
  if (runs.length === 0) return []
  const r = await tx.raw(`
    INSERT INTO automation_runs (tenant_id, rule_id, rule_version, trigger, trigger_key, depth, input)
    SELECT ?, x.rule_id, x.rule_version, x.trigger, x.trigger_key, x.depth, x.input
    FROM ROWS FROM (jsonb_to_recordset(?::jsonb) AS (rule_id uuid, rule_version int, trigger jsonb, trigger_key text, depth int, input jsonb))
      WITH ORDINALITY AS x(rule_id, rule_version, trigger, trigger_key, depth, input, n)
    ORDER BY x.n
    ON CONFLICT (tenant_id, rule_id, trigger_key) DO NOTHING
    RETURNING id`, [tenantId, JSON.stringify(runs.map(r => ({ ...r, input: r.input ?? null })))])
  return r.rows.map((x: { id: string }) => x.id)
}

export interface RunRow {
  tenant_id: string
  id: string
  rule_id: string
  rule_version: number
  status: RunStatus
  trigger: Record<string, unknown>
  trigger_key: string
  depth: number
  input: unknown
  matched: boolean | null
  condition_result: boolean | null
  steps: unknown[]
  request: Record<string, unknown> | null
  outgoing: { url: string, method: string, headers: Record<string, string>, body: string | null } | null
  response: Record<string, unknown> | null
  attempt_log: Array<Record<string, unknown>>
  attempts: number
  error: { code: string, message: string } | null
  replay_of: string | null
  queued_at: Date
  started_at: Date | null
  finished_at: Date | null
}

export async function lockRun (tx: Tx, tenantId: string, id: string): Promise<RunRow | null> {
  const r = await prepared(tx, 'automation.lock-run', 'SELECT * FROM automation_runs WHERE tenant_id = ? AND id = ? FOR UPDATE', [tenantId, id])
  return r.rows[0] ?? null
}

export async function findRun (db: Queryable, tenantId: string, ruleId: string, id: string): Promise<RunRow | null> {
  return (await db('automation_runs').where({ tenant_id: tenantId, rule_id: ruleId, id }).first()) ?? null
}

const JSON_COLUMNS = new Set(['trigger', 'input', 'steps', 'request', 'outgoing', 'response', 'attempt_log', 'error'])

export async function updateRun (tx: Tx, tenantId: string, id: string, patch: Partial<Omit<RunRow, 'tenant_id' | 'id'>>): Promise<void> {
  const row: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(patch)) row[k] = JSON_COLUMNS.has(k) && v !== null ? JSON.stringify(v) : v
  await tx('automation_runs').where({ tenant_id: tenantId, id }).update(row)
}

export interface RunFilter { limit: number, offset: number, status?: RunStatus, from?: string, to?: string }

/** Newest first; relies on automation_runs_rule_queued. */
export async function listRuns (db: Queryable, tenantId: string, ruleId: string, f: RunFilter): Promise<{ rows: RunRow[], total: number }> {
  const q = db('automation_runs').where({ tenant_id: tenantId, rule_id: ruleId })
  if (f.status !== undefined) q.where({ status: f.status })
  if (f.from !== undefined) q.where('queued_at', '>=', f.from)
  if (f.to !== undefined) q.where('queued_at', '<', f.to)
  const [rows, [{ n }]] = await Promise.all([
    q.clone().orderBy([{ column: 'queued_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(f.limit).offset(f.offset).select('*'),
    q.clone().count<Array<{ n: number }>>('* as n')
  ])
  return { rows, total: Number(n) }
}

/** Deletes up to `limit` finished runs of the tenant with one of `statuses`, finished before `before`. */
export async function pruneRuns (db: Queryable, tenantId: string, statuses: RunStatus[], before: Date, limit: number): Promise<number> {
  const r = await db.raw(`
    DELETE FROM automation_runs WHERE tenant_id = ? AND id IN (
      SELECT id FROM automation_runs
      WHERE tenant_id = ? AND finished_at < ? AND status = ANY(?::text[])
      LIMIT ?)`, [tenantId, tenantId, before, statuses, limit])
  return r.rowCount ?? 0
}

export async function tenantsWithRuns (db: Queryable): Promise<string[]> {
  // IN, not a correlated EXISTS: the same semi-join for PostgreSQL, and Citus cannot correlate a
  // subquery with the reference table tenants (it runs the IN list as a subplan instead).
  const r = await db.raw('SELECT t.id AS tenant_id FROM tenants t WHERE t.id IN (SELECT r.tenant_id FROM automation_runs r)')
  return r.rows.map((x: { tenant_id: string }) => x.tenant_id)
}

/** A run with what a webhook attempt needs of its rule: roles and signing secret now, the content of the run's version. */
export type RunForAttempt = RunRow & { actor_roles: string[] | null, signing_secret: string | null, content: RuleContent | null }

/**
 * A webhook attempt's one read before its call (no lock: the call happens outside any
 * transaction). The secret is read on every attempt, as it may rotate between them.
 */
export async function runForAttempt (db: Queryable, tenantId: string, id: string): Promise<RunForAttempt | null> {
  const r = await prepared(db, 'automation.run-for-attempt', `
    SELECT run.*, r.actor_roles, r.signing_secret, v.definition AS content
    FROM automation_runs run
    LEFT JOIN automation_rules r ON r.tenant_id = run.tenant_id AND r.id = run.rule_id
    LEFT JOIN automation_rule_versions v ON v.tenant_id = run.tenant_id AND v.rule_id = run.rule_id AND v.version = run.rule_version
    WHERE run.tenant_id = ? AND run.id = ?`, [tenantId, id])
  return r.rows[0] ?? null
}

export type ClaimedRun = RunRow & { rule_status: RuleStatus | null, rule_deleted: boolean | null, actor_roles: string[] | null, content?: RuleContent | null }

const CLAIM_RUN = (withContent: boolean) => `
  SELECT run.*, r.status AS rule_status, r.deleted_at IS NOT NULL AS rule_deleted, r.actor_roles${withContent ? ', v.definition AS content' : ''},
    set_config('synchronous_commit', 'off', true) AS async_commit
  FROM automation_runs run
  LEFT JOIN automation_rules r ON r.tenant_id = run.tenant_id AND r.id = run.rule_id${withContent
    ? `
  LEFT JOIN automation_rule_versions v ON v.tenant_id = run.tenant_id AND v.rule_id = run.rule_id AND v.version = run.rule_version`
    : ''}
  WHERE run.tenant_id = ? AND run.id = ?
  FOR UPDATE OF run`
const CLAIM_WITH_CONTENT = CLAIM_RUN(true)
const CLAIM_WITHOUT_CONTENT = CLAIM_RUN(false)

/**
 * A run's row, locked until COMMIT, with its rule's current status and roles and (unless the
 * caller holds it already: a published version never changes) the content of its version: one
 * round trip. Primary keys of automation_runs, automation_rules and automation_rule_versions.
 * It also makes the run's transaction commit asynchronously (`synchronous_commit` off for this
 * transaction alone, set in this statement so that it costs no round trip): the run's outcome and
 * its effect are one commit record, and pg-boss completes the job in a later, durable commit, which
 * flushes the WAL past the run's. A crash can lose the run only together with the job's completion,
 * so the job runs again and finds its run still queued (README "Invariants").
 */
export async function claimRun (tx: Tx, tenantId: string, id: string, withContent: boolean): Promise<ClaimedRun | null> {
  const r = await (withContent
    ? prepared(tx, 'automation.claim-run+content', CLAIM_WITH_CONTENT, [tenantId, id])
    : prepared(tx, 'automation.claim-run', CLAIM_WITHOUT_CONTENT, [tenantId, id]))
  return r.rows[0] ?? null
}

/** A live rule by id, for the ingress (which then checks the token and the slug). */
export async function ruleForIngress (db: Queryable, tenantId: string, ruleId: string): Promise<(RuleRow & { live_content: RuleContent | null }) | null> {
  const r = await prepared(db, 'automation.rule-for-ingress', `
    SELECT r.*, v.definition AS live_content FROM automation_rules r
    LEFT JOIN automation_rule_versions v ON v.tenant_id = r.tenant_id AND v.rule_id = r.id AND v.version = r.live_version
    WHERE r.tenant_id = ? AND r.id = ? AND r.deleted_at IS NULL`, [tenantId, ruleId])
  return r.rows[0] ?? null
}

/**
 * Whether a rule of the tenant other than `ruleId` is live (sandbox or active) with this webhook
 * slug: the ingress asks only when the token's own rule is not (index automation_rules_tenant_live_slug).
 */
export async function otherRuleIsLiveWithSlug (db: Queryable, tenantId: string, slug: string, ruleId: string): Promise<boolean> {
  const r = await db.raw(`SELECT 1 FROM automation_rules
    WHERE tenant_id = ? AND live_slug = ? AND deleted_at IS NULL AND id <> ? AND status <> 'draft' AND live_version IS NOT NULL`, [tenantId, slug, ruleId])
  return r.rows.length > 0
}

/**
 * +1 execution for the rule of each row of `from`, on the slot row of the database connection
 * (its backend pid modulo STAT_SLOTS, migration 202611240500), so concurrent runs of one rule do
 * not wait for each other's COMMIT on one row: a connection runs one transaction at a time, and
 * two live connections share a slot once in STAT_SLOTS (slots picked at random collided often).
 * Binding: the tenant id.
 */
const STAT_SLOTS = 1024

function countExecution (from: string): string {
  return `INSERT INTO automation_rule_stats (tenant_id, rule_id, slot, executed) SELECT ?, rule_id, (pg_backend_pid() % ${STAT_SLOTS})::smallint, 1 FROM ${from}
    ON CONFLICT (tenant_id, rule_id, slot) DO UPDATE SET executed = automation_rule_stats.executed + 1`
}

const finishTexts = new Map<string, string>()

/**
 * The UPDATE writing an outcome onto a still unfinished run, returning its rule id: a fixed text
 * per set of columns (a handful of outcome shapes, kept), built without knex's query builder,
 * which cost a worker more CPU per run than the rest of the outcome's preparation.
 * Primary key of automation_runs.
 */
function finishUpdate (tenantId: string, id: string, patch: Partial<Omit<RunRow, 'tenant_id' | 'id'>>): { sql: string, bindings: Bindings } {
  const columns = ['finished_at']
  const bindings: Bindings = [patch.finished_at ?? new Date()]
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined || k === 'finished_at') continue
    columns.push(k)
    bindings.push((JSON_COLUMNS.has(k) && v !== null ? JSON.stringify(v) : v) as Bindings[number])
  }
  const key = columns.join(',')
  let text = finishTexts.get(key)
  if (text === undefined) {
    if (!columns.every(c => /^[a-z_]+$/.test(c))) throw new Error(`not a run column: ${key}`)
    text = `UPDATE automation_runs SET ${columns.map(c => `${c} = ?`).join(', ')} WHERE tenant_id = ? AND id = ? AND finished_at IS NULL RETURNING rule_id`
    if (finishTexts.size >= 100) finishTexts.clear()
    finishTexts.set(key, text)
  }
  bindings.push(tenantId, id)
  return { sql: text, bindings }
}

/**
 * The final outcome as the CTEs of a statement the write pipeline folds its changes into
 * (lib/pipeline `fold`): the run row (only while unfinished), the execution count, and `change`
 * (audit and event of the outcome) yielded once per row written, so a second writer of the same
 * outcome writes, counts and audits nothing.
 */
export function finishRunFolded (tenantId: string, id: string, patch: Partial<Omit<RunRow, 'tenant_id' | 'id'>>, change: unknown): FoldedStatement {
  const update = finishUpdate(tenantId, id, patch)
  return {
    ctes: [
      `fin AS (${update.sql})`,
      `fin_stats AS (${countExecution('fin')})`
    ],
    select: 'SELECT 1 AS n, fin.rule_id AS result, ?::jsonb AS change FROM fin',
    bindings: [...update.bindings, tenantId, JSON.stringify(change)],
    // The text depends only on which columns the outcome sets (a handful of shapes): named after
    // its text, the statement is planned once per connection and shape instead of at every run.
    name: statementName('automation.finish-run', update.sql)
  }
}

/**
 * Writes a run's final outcome and counts the execution, in one statement. Only a run not yet
 * finished is written and counted, so writing the same outcome twice counts it once.
 */
export async function finishRunRow (tx: Tx, tenantId: string, id: string, patch: Partial<Omit<RunRow, 'tenant_id' | 'id'>>): Promise<void> {
  const update = finishUpdate(tenantId, id, patch)
  await tx.raw(`WITH u AS (${update.sql})
    ${countExecution('u')}`, [...update.bindings, tenantId])
}

/** Every rule's execution count (a metrics scrape; one row per rule that ever ran). */
export async function executionCounts (db: Queryable): Promise<Array<{ rule_id: string, executed: number }>> {
  const r = await db.raw('SELECT rule_id, sum(executed)::float8 AS executed FROM automation_rule_stats GROUP BY rule_id')
  return r.rows
}
