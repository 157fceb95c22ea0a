import type { Queryable } from '../db.js'
import * as objects from '../objects/index.js'
import * as objectTypes from '../object-types/index.js'
import * as sql from './sql.js'

// Registered at import time by lib/modules.ts, which every entry point imports.

objectTypes.references.workflowExists = async (ctx, tx, id) =>
  sql.workflowExists((tx ?? ctx.db) as Queryable, ctx.tenantId, id)

/** A new object starts in the initial state of the latest version of its type's workflow. */
objects.workflowHooks.initialState = async (ctx, tx, workflowId) => {
  const wf = await sql.findWorkflow(tx, ctx.tenantId, workflowId)
  return wf?.definition.initialState ?? null
}
