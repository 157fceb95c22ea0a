import * as automation from '../../lib/automation/index.js'

/** automation.prune: retention of finished runs (scheduled hourly by the worker). */
export async function handleAutomationPrune (deps: automation.EngineDeps): Promise<void> {
  const pruned = await automation.pruneRuns(deps.db, deps.config)
  deps.log.info({ queue: 'automation.prune', pruned }, 'automation runs pruned')
}
