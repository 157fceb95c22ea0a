import type { ServiceContext } from '../context.js'
import type { Queryable } from '../db.js'
import * as sql from './sql.js'

// What lib/objects and lib/object-types ask of workflows (lib/modules.ts wires them in).

/** Whether a type of this tenant may name the workflow. */
export async function workflowExists (ctx: ServiceContext, db: Queryable, id: string): Promise<boolean> {
  return sql.workflowExists(db, ctx.tenantId, id)
}

/** A new object starts in the initial state of the latest version of its type's workflow. */
export async function initialState (ctx: ServiceContext, db: Queryable, workflowId: string): Promise<string | null> {
  const wf = await sql.findWorkflow(db, ctx.tenantId, workflowId)
  return wf?.definition.initialState ?? null
}
