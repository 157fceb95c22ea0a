import './hooks.js'

export * as schema from './schema.js'
export { createWorkflow, getWorkflow, listWorkflows, patchWorkflow, workflowRegistry } from './service.js'
export { explainTransitions, transitionObject, type ExplainResult } from './transitions.js'
export { evaluateGuardLists, permissionOutcome, type GuardResult, type GuardSubject } from './guards.js'
export { checkWorkflowDefinition, normalizeDefinition, transitionsFrom, type Guard, type WorkflowDefinition, type Transition, type State } from './definition.js'
export type { WorkflowDto } from './dto.js'
