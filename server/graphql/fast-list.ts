import { HeaderMap, type ApolloServerPlugin } from '@apollo/server'
import { GraphQLError, Kind, getArgumentValues, getVariableValues, type FieldNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql'
import * as objects from '../../lib/objects/index.js'
import { listArgs } from './common.js'
import type { GraphqlContext } from './context.js'
import { formatError, isUnexpected } from './errors.js'

/**
 * The hot read, `{ objects(...) { id typeId attributes geometry ... } }`, answered without
 * graphql-js execution: the same service call as the `objects` resolver (its page is JSON built by
 * PostgreSQL), then each item cut to the selected keys in selection order. graphql-js would
 * otherwise complete 100 x N scalar fields one by one (a resolve-info object each), which cost
 * more CPU than the rest of the request. It applies only where the result cannot differ from
 * execution: a query whose single root field is `objects`, selecting only scalar columns (aliases
 * allowed; no arguments, directives, fragments, __typename or nested fields). Parsing, validation,
 * the depth and cost limits ran before this hook. An error of the service call is answered as
 * execution would answer a resolver's error (data.objects null, the error formatted by the same
 * formatter, HTTP 200), so a refusal is audited once.
 */
const COLUMNS = new Set(['id', 'typeId', 'publicId', 'attributes', 'geometry', 'workflowState', 'version', 'validFrom', 'createdAt', 'updatedAt'])

interface Plan { field: FieldNode, responseKey: string, keys: Array<[responseKey: string, column: string]> }

/** The plan for an operation of the fast shape, or null. */
export function planFastList (operation: OperationDefinitionNode): Plan | null {
  if (operation.operation !== 'query' || (operation.directives?.length ?? 0) > 0) return null
  const roots = operation.selectionSet.selections
  if (roots.length !== 1 || roots[0].kind !== Kind.FIELD) return null
  const field = roots[0]
  if (field.name.value !== 'objects' || (field.directives?.length ?? 0) > 0 || field.selectionSet === undefined) return null
  const keys: Plan['keys'] = []
  for (const s of field.selectionSet.selections) {
    if (s.kind !== Kind.FIELD || !COLUMNS.has(s.name.value) || (s.arguments?.length ?? 0) > 0 || (s.directives?.length ?? 0) > 0) return null
    const key = s.alias?.value ?? s.name.value
    if (keys.some(([k]) => k === key)) return null // merged duplicates: leave them to graphql-js
    keys.push([key, s.name.value])
  }
  return { field, responseKey: field.alias?.value ?? 'objects', keys }
}

type Answer = { data: Record<string, unknown>, errors?: ReturnType<typeof formatError>[] }

async function answer (schema: GraphQLSchema, operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined, c: GraphqlContext): Promise<Answer | null> {
  const plan = planFastList(operation)
  if (plan === null) return null
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {})
  const fieldDef = schema.getQueryType()?.getFields().objects
  if (coerced.errors !== undefined || fieldDef === undefined) return null
  try {
    const args = getArgumentValues(fieldDef, plan.field, coerced.coerced)
    const page = await objects.listObjects(c.service, listArgs(objects.schema.ListObjectsQuery, args))
    const items = page.items.map(o => {
      const item: Record<string, unknown> = {}
      for (const [key, column] of plan.keys) item[key] = (o as Record<string, unknown>)[column] ?? null
      return item
    })
    return { data: { [plan.responseKey]: items } }
  } catch (err) {
    // What graphql-js makes of a resolver's error: located at the field, the original kept.
    const error = new GraphQLError((err as Error).message, { nodes: [plan.field], path: [plan.responseKey], originalError: err as Error })
    if (isUnexpected(error)) c.service.log.error({ err }, 'unhandled GraphQL error')
    return { data: { [plan.responseKey]: null }, errors: [formatError(error.toJSON(), error)] }
  }
}

export function fastList (): ApolloServerPlugin<GraphqlContext> {
  return {
    async requestDidStart () {
      return {
        async responseForOperation ({ schema, operation, request, contextValue }) {
          // Apollo asks even when operationName names no operation of the document (typed as
          // always set, it is undefined then): execution refuses that request, not this plugin.
          if ((operation as OperationDefinitionNode | undefined) === undefined) return null
          const result = await answer(schema, operation, request.variables, contextValue)
          return result === null ? null : { body: { kind: 'single', singleResult: result }, http: { status: undefined, headers: new HeaderMap() } }
        }
      }
    }
  }
}
