import * as counters from '../counters/index.js'

/**
 * The license limits this service enforces (docs/behaviour.md "Licensing") and the counter
 * (lib/counters) each reads. Monthly limits count into the bucket of the current UTC month, so they
 * start again from zero at every month start without a reset job. A limit code not listed here is
 * reported in GET /v1/license but not enforced.
 *
 * Who records what: object_count (lib/objects), relation_count (lib/relations) and
 * object_type_count (lib/object-types) are recorded by their modules in Change.counts, +1 when a
 * record is created or restored and -1 when it is deleted; layer_count and automation_rule_count
 * must be recorded the same way by lib/layers (counters.LAYERS) and lib/automation
 * (counters.AUTOMATION_RULES), with `limit: 'layer_count'` / `'automation_rule_count'` on the
 * WriteSpec of their create (and restore). The monthly ones are recorded by this module for every
 * write whose WriteSpec names them (workflow_run_count: a transition, lib/workflows, and every
 * other applied automation effect, lib/automation execute.ts `countEffect`), and by
 * `countQueryRun` for query runs.
 */
export interface LimitDef {
  counter: string
  monthly: boolean
  /** The most units one write adds (a batch create: up to 1,000 objects); 1 when absent. */
  maxUnitsPerWrite?: number
}

export const LIMITS: Readonly<Record<string, LimitDef>> = Object.freeze({
  object_count: { counter: counters.OBJECTS, monthly: false, maxUnitsPerWrite: 1000 },
  workflow_run_count: { counter: counters.WORKFLOW_RUNS, monthly: true },
  query_count: { counter: counters.QUERIES, monthly: true },
  relation_count: { counter: counters.RELATIONS, monthly: false },
  object_type_count: { counter: counters.OBJECT_TYPES, monthly: false },
  layer_count: { counter: counters.LAYERS, monthly: false },
  automation_rule_count: { counter: counters.AUTOMATION_RULES, monthly: false }
})

/** Module switches (docs/behaviour.md "Licensing"); a feature missing from a license is on. */
export const FEATURES = ['automation', 'graphql', 'tiles', 'ogc', 'relations', 'queries', 'audit'] as const
export type Feature = typeof FEATURES[number]
