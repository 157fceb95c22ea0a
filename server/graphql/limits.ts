import depthLimit from 'graphql-depth-limit'
import { getComplexity, simpleEstimator, type ComplexityEstimator } from 'graphql-query-complexity'
import { GraphQLError, KnownFragmentNamesRule, NoFragmentCyclesRule, validate, type DocumentNode, type ValidationRule } from 'graphql'
import type { ApolloServerPlugin } from '@apollo/server'
import { MAX_JSON_DEPTH, nestsTooDeep } from '../../lib/storable.js'

/**
 * Guard rails: one request cannot fetch the world.
 * - depth: at most MAX_DEPTH nested selections (introspection fields do not count);
 * - cost: every field costs 1, and the selection under a field with a `limit` argument (or a
 *   `query.limit`) counts `limit` times. `objects(limit: 100) { id typeId attributes geometry }`
 *   costs 401; the same with `relatedObjects(limit: 100) { id }` inside costs 20,301.
 * Both refusals are BAD_REQUEST (HTTP 400) naming the limit.
 */
export const MAX_DEPTH = 10
export const MAX_COST = 50_000
/** The page size assumed when a list's limit is not given (every list defaults to 100). */
const DEFAULT_LIMIT = 100

const FRAGMENT_RULES = [KnownFragmentNamesRule, NoFragmentCyclesRule]

/** graphql-depth-limit, with its refusal reworded to name the limit and carry details like the cost refusal. */
export const depthRule: ValidationRule = context => {
  // graphql-depth-limit walks fragment spreads as soon as it is built, before graphql's own rules
  // visit: an unknown or cyclic fragment crashed or overflowed that walk (a 500). Those rules refuse them.
  if (validate(context.getSchema(), context.getDocument(), FRAGMENT_RULES).length > 0) return {}
  const reworded = Object.create(context, {
    reportError: {
      value: (e: GraphQLError) => context.reportError(new GraphQLError(`query depth exceeds the depth limit of ${MAX_DEPTH} nested selections: ask for fewer nested fields`, {
        nodes: e.nodes, extensions: { code: 'BAD_REQUEST', details: { limit: 'depth', maximum: MAX_DEPTH } }
      }))
    }
  })
  return depthLimit(MAX_DEPTH)(reworded)
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
