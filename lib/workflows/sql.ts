import type { Bindings, Queryable, Tx } from '../db.js'
import type { SpatialCondition } from '../rules/index.js'
import type { WorkflowDefinition } from './definition.js'

export interface WorkflowRow {
  id: string
  tenant_id: string
  key: string
  latest_version: number
  created_at: Date
  updated_at: Date
}

export interface WorkflowVersionRow {
  workflow_id: string
  version: number
  definition: WorkflowDefinition
  created_at: Date
  created_by: string | null
}

export type WorkflowWithLatest = WorkflowRow & { definition: WorkflowDefinition }

const NOW_MS = "date_trunc('milliseconds', now())"

const LATEST = `
  SELECT w.*, v.definition
  FROM workflows w JOIN workflow_versions v ON v.tenant_id = w.tenant_id AND v.workflow_id = w.id AND v.version = w.latest_version`

/** A workflow with its latest (effective) version; `lock` serialises writers of the workflow. */
export async function findWorkflow (db: Queryable, tenantId: string, id: string, lock = false): Promise<WorkflowWithLatest | null> {
  const r = await db.raw(`${LATEST} WHERE w.id = ? AND w.tenant_id = ?${lock ? ' FOR UPDATE OF w' : ''}`, [id, tenantId])
  return r.rows[0] ?? null
}

/** Relies on workflows_tenant_created for the default order. */
export async function listWorkflows (db: Queryable, tenantId: string, f: { limit: number, offset: number, key?: string }): Promise<{ rows: WorkflowWithLatest[], total: number }> {
  const where = ['w.tenant_id = ?']
  const params: Bindings = [tenantId]
  if (f.key !== undefined) { where.push('w.key = ?'); params.push(f.key) }
  const cond = where.join(' AND ')
  const [rows, count] = await Promise.all([
    db.raw(`${LATEST} WHERE ${cond} ORDER BY w.created_at, w.id LIMIT ? OFFSET ?`, [...params, f.limit, f.offset]),
    db.raw(`SELECT count(*)::int AS n FROM workflows w WHERE ${cond}`, params)
  ])
  return { rows: rows.rows, total: count.rows[0].n }
}

export async function insertWorkflow (tx: Tx, tenantId: string, key: string): Promise<WorkflowRow> {
  const [row] = await tx('workflows').insert({ tenant_id: tenantId, key }).returning('*')
  return row
}

export async function insertVersion (tx: Tx, tenantId: string, workflowId: string, version: number, def: WorkflowDefinition, createdBy: string): Promise<void> {
  await tx('workflow_versions').insert({ workflow_id: workflowId, tenant_id: tenantId, version, definition: JSON.stringify(def), created_by: createdBy })
}

export async function setLatestVersion (tx: Tx, tenantId: string, id: string, version: number): Promise<void> {
  await tx('workflows').where({ tenant_id: tenantId, id }).update({ latest_version: version, updated_at: tx.raw(NOW_MS) })
}

export async function listVersions (db: Queryable, tenantId: string, workflowId: string): Promise<WorkflowVersionRow[]> {
  return db('workflow_versions').where({ tenant_id: tenantId, workflow_id: workflowId }).orderBy('version').select('*')
}

export async function workflowExists (db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const r = await db.raw('SELECT 1 FROM workflows WHERE id = ? AND tenant_id = ?', [id, tenantId])
  return r.rows.length > 0
}

export interface SpatialResult { passed?: boolean, distanceMeters?: number, error?: string }

/**
 * Tests every spatial condition against one object's stored geometry in one statement. The
 * geometry is read from objects.geom (not re-parsed from GeoJSON, which would round it), and
 * each test runs in workflow_spatial_test (migration 202611210100), which turns a PostGIS
 * error into {error} for that condition alone. Answers come back in the order given.
 */
export async function spatialTests (db: Queryable, tenantId: string, objectId: string, conds: SpatialCondition[]): Promise<SpatialResult[]> {
  if (conds.length === 0) return []
  const input = conds.map((c, idx) => ({ idx, op: c.operator, geometry: c.geometry, meters: c.distanceMeters ?? null }))
  const r = await db.raw(`
    SELECT c.idx, workflow_spatial_test(c.op, o.geom, c.geometry::text, c.meters) AS result
    FROM objects o
    CROSS JOIN jsonb_to_recordset(?::jsonb) AS c(idx int, op text, geometry jsonb, meters double precision)
    WHERE o.id = ? AND o.tenant_id = ?`, [JSON.stringify(input), objectId, tenantId])
  const byIdx = new Map<number, SpatialResult>(r.rows.map((x: { idx: number, result: SpatialResult }) => [x.idx, x.result]))
  return conds.map((_c, i) => byIdx.get(i) ?? { error: 'the object was not found' })
}
