import type { ModuleHooks } from './context.js'
import * as audit from './audit/index.js'
import * as license from './license/index.js'
import * as workflows from './workflows/index.js'

/**
 * The connections between lib's modules where a lower module needs a higher one: lib/license
 * takes part in every write, query run and automation run; lib/workflows gives new objects their
 * initial state and checks a type's workflow; lib/access writes its refusals to lib/audit. Each process's main.ts calls this once and passes
 * the result in (ServiceContext.hooks, the engine's dependencies).
 */
export function wireModules (): ModuleHooks {
  return {
    write: license.writeHooks,
    beforeQueryRun: license.countQueryRun,
    automationGate: ctx => license.assertFeature(ctx, 'automation'),
    initialState: workflows.initialState,
    workflowExists: workflows.workflowExists,
    recordRefusal: (ctx, event) => audit.recordForContext(ctx, event)
  }
}
