import type { WorkflowVersionRow, WorkflowWithLatest } from './sql.js'

export function toWorkflowDto (w: WorkflowWithLatest) {
  const d = w.definition
  return {
    id: w.id,
    key: w.key,
    name: d.name,
    initialState: d.initialState,
    states: d.states,
    transitions: d.transitions,
    version: w.latest_version,
    createdAt: w.created_at.toISOString(),
    updatedAt: w.updated_at.toISOString()
  }
}

export type WorkflowDto = ReturnType<typeof toWorkflowDto>

/** Workflow versions are effective when written: status published, sandboxAt null, publishedAt = createdAt. */
export function toRegistryVersion (v: WorkflowVersionRow) {
  const at = v.created_at.toISOString()
  return {
    version: v.version,
    status: 'published',
    definition: v.definition,
    createdAt: at,
    createdBy: v.created_by,
    sandboxAt: null,
    publishedAt: at
  }
}
