import { getComplexity, simpleEstimator, type ComplexityEstimator } from 'graphql-query-complexity'
import { GraphQLError, Kind, visit, BREAK, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode, type ValidationRule } from 'graphql'
import type { ApolloServerPlugin } from '@apollo/server'
import { MAX_JSON_DEPTH, nestsTooDeep } from '../../lib/storable.js'

/**
 * Guard rails: one request cannot fetch the world.
 * - depth: at most MAX_DEPTH nested selections (introspection fields do not count);
 * - cost: every field costs 1, and the selection under a field with a `limit` argument (or a
 *   `query.limit`) counts `limit` times. `objects(limit: 100) { id typeId attributes geometry }`
 *   costs 401; the same with `relatedObjects(limit: 100) { id }` inside costs 20,301.
 * - size: at most GRAPHQL_MAX_TOKENS tokens, refused by the parser (Apollo's parseOptions), so
 *   before graphql's own validation, whose rules grow faster than the document (5,000 aliases
 *   held the process 2 s); then at most GRAPHQL_MAX_FIELDS field selections as written (aliases
 *   included), spreads not expanded (the cost limit weighs those), and GRAPHQL_MAX_ROOT_FIELDS
 *   fields at an operation's root (run in parallel, each holding a connection);
 * All refusals are BAD_REQUEST (HTTP 400) naming the limit.
 */
export const MAX_DEPTH = 10
export const MAX_COST = 50_000
/** The page size assumed when a list's limit is not given (every list defaults to 100). */
const DEFAULT_LIMIT = 100

/**
 * The most fields with a selection of their own on any path below `set` (introspection fields do
 * not count). Each fragment is measured once: walking every spread anew is exponential in a chain
 * of fragments that spread the next one twice. An unknown fragment, or one spread within itself,
 * counts 0 here; graphql's own rules refuse that document (400).
 */
function depthOf (set: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, memo: Map<string, number>): number {
  let depth = 0
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) {
      if (s.selectionSet !== undefined && !s.name.value.startsWith('__')) depth = Math.max(depth, 1 + depthOf(s.selectionSet, fragments, memo))
    } else if (s.kind === Kind.INLINE_FRAGMENT) {
      depth = Math.max(depth, depthOf(s.selectionSet, fragments, memo))
    } else {
      const name = s.name.value
      const fragment = fragments.get(name)
      if (!memo.has(name) && fragment !== undefined) {
        memo.set(name, 0)
        memo.set(name, depthOf(fragment.selectionSet, fragments, memo))
      }
      depth = Math.max(depth, memo.get(name) ?? 0)
    }
  }
  return depth
}

/** Refuses an operation deeper than MAX_DEPTH, naming the limit with details like the cost refusal. */
export const depthRule: ValidationRule = context => {
  const definitions = context.getDocument().definitions
  const fragments = new Map(definitions.filter(d => d.kind === Kind.FRAGMENT_DEFINITION).map(d => [d.name.value, d]))
  const memo = new Map<string, number>()
  for (const op of definitions) {
    if (op.kind !== Kind.OPERATION_DEFINITION || depthOf(op.selectionSet, fragments, memo) <= MAX_DEPTH) continue
    context.reportError(new GraphQLError(`query depth exceeds the depth limit of ${MAX_DEPTH} nested selections: ask for fewer nested fields`, {
      nodes: op, extensions: { code: 'BAD_REQUEST', details: { limit: 'depth', maximum: MAX_DEPTH } }
    }))
  }
  return {}
}

/** The fields an operation selects at its root (through fragments there), each run in parallel. */
function rootFields (set: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, seen: Set<string>): number {
  let n = 0
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) n++
    else if (s.kind === Kind.INLINE_FRAGMENT) n += rootFields(s.selectionSet, fragments, seen)
    else if (!seen.has(s.name.value)) {
      seen.add(s.name.value)
      const f = fragments.get(s.name.value)
      if (f !== undefined) n += rootFields(f.selectionSet, fragments, seen)
    }
  }
  return n
}

const sizeError = (message: string, limit: string, maximum: number): GraphQLError =>
  new GraphQLError(message, { extensions: { code: 'BAD_REQUEST', details: { limit, maximum } } })

/**
 * Refuses a document holding more than `maxFields` field selections as written (counted up to
 * maxFields + 1), or an operation with more than `maxRootFields` at its root: graphql runs a
 * query's root fields at once, each with statements of its own, so one request of 500 aliased
 * lists would hold 500 connections of the shared pool, past the tenant gate.
 */
export function sizeRule (limits: { maxFields: number, maxRootFields: number }): ValidationRule {
  return context => {
    const document = context.getDocument()
    let n = 0
    visit(document, { Field: () => (++n > limits.maxFields ? BREAK : undefined) })
    if (n > limits.maxFields) {
      context.reportError(sizeError(`the document holds more than ${limits.maxFields} fields (aliases included): ask for fewer`, 'fields', limits.maxFields))
      return {}
    }
    const fragments = new Map(document.definitions.filter(d => d.kind === Kind.FRAGMENT_DEFINITION).map(d => [d.name.value, d]))
    for (const op of document.definitions) {
      if (op.kind !== Kind.OPERATION_DEFINITION || rootFields(op.selectionSet, fragments, new Set()) <= limits.maxRootFields) continue
      context.reportError(sizeError(`the operation selects more than ${limits.maxRootFields} root fields (aliases included): ask for fewer, or in several requests`, 'rootFields', limits.maxRootFields))
    }
    return {}
  }
}

const limitEstimator: ComplexityEstimator = ({ args, childComplexity }) => {
  const limit = typeof args.limit === 'number' ? args.limit
    : 'query' in args ? (typeof args.query?.limit === 'number' ? args.query.limit : DEFAULT_LIMIT)
      : null
  return limit === null ? undefined : 1 + childComplexity * limit
}

const estimators = [limitEstimator, simpleEstimator({ defaultComplexity: 1 })]

/**
 * Costs by parsed document: Apollo's document store hands back the same DocumentNode for the same
 * query text, so a repeated query (with the same operation and variables) is costed once. The
 * cost walk is a large share of a small query's CPU. Bounded per document (distinct variables).
 */
const costs = new WeakMap<DocumentNode, Map<string, number>>()
const MAX_COSTS_PER_DOCUMENT = 64

function costOf (schema: Parameters<typeof getComplexity>[0]['schema'], document: DocumentNode, operationName: string | undefined, variables: Record<string, unknown> | undefined): number {
  let byArgs = costs.get(document)
  if (byArgs === undefined) { byArgs = new Map(); costs.set(document, byArgs) }
  const key = JSON.stringify([operationName ?? null, variables ?? null])
  let cost = byArgs.get(key)
  if (cost === undefined) {
    cost = getComplexity({ schema, query: document, variables, operationName, estimators })
    if (byArgs.size >= MAX_COSTS_PER_DOCUMENT) byArgs.clear()
    byArgs.set(key, cost)
  }
  return cost
}

export function costLimit (): ApolloServerPlugin {
  return {
    async requestDidStart () {
      return {
        async didResolveOperation ({ request, document, schema, operation }) {
          // Before anything recurses through the variables (the cost cache's key below is their
          // JSON text): deep enough nesting overflows the stack, a 500. Stored JSON has the same
          // bound (lib/storable.ts).
          if (nestsTooDeep(request.variables)) {
            throw new GraphQLError(`variables nest deeper than ${MAX_JSON_DEPTH} levels`, {
              extensions: { code: 'BAD_REQUEST', http: { status: 400 }, details: { field: 'variables', reason: `nests deeper than ${MAX_JSON_DEPTH} levels` } }
            })
          }
          // No operation of that name (operationName naming none in the document): execution
          // refuses it ("Unknown operation named ...", 400); the cost walk would fail on it (a 500).
          if (operation === undefined) return
          let cost: number
          try {
            cost = costOf(schema, document, request.operationName ?? undefined, request.variables)
          } catch (err) {
            // Variables that do not fit their declared types ("x" for an Int): the cost walk
            // coerces them before execution would, so its refusal is the client's fault, answered
            // as Apollo answers the same refusal at execution (BAD_USER_INPUT, 400).
            if (err instanceof GraphQLError) throw new GraphQLError(err.message, { nodes: err.nodes, extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } })
            throw err
          }
          if (cost > MAX_COST) {
            throw new GraphQLError(`query cost ${cost} exceeds the cost limit of ${MAX_COST}: ask for fewer items (limit) or fewer nested lists`, {
              extensions: { code: 'BAD_REQUEST', http: { status: 400 }, details: { limit: 'cost', maximum: MAX_COST, cost } }
            })
          }
        }
      }
    }
  }
}
