export * as schema from './schema.js'
export { createRule, getRule, listRules, patchRule, publishRule, ruleRegistry } from './service.js'
export { existingRuleIds, findGuardRules, type GuardRuleRow, type RuleFilter } from './sql.js'
export {
  checkLogicCondition, checkSpatialCondition, checkRuleDefinition,
  type LogicCondition, type SpatialCondition, type SpatialOperator, type RuleDefinition, type RuleKind, type Fault
} from './definition.js'
export type { RuleDto } from './dto.js'
