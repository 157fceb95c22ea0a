import { Readable } from 'node:stream'
import { setImmediate } from 'node:timers/promises'
import type { FormattedExecutionResult } from 'graphql'
import { ApolloServer, HeaderMap } from '@apollo/server'
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled'
import type { RouteModule } from '../routes/index.js'
import { JSON_TYPE, route, type Answer, type RouteRequest, type RouteSpec } from '../http/route.js'
import { parse, parseQuery } from '../../lib/validation.js'
import { MAX_JSON_DEPTH } from '../../lib/storable.js'
import { graphqlContext, type GraphqlContext } from './context.js'
import { graphqlSchema, printedSchema } from './schema.js'
import { costLimit, depthRule, sizeRule, MAX_COST, MAX_DEPTH } from './limits.js'
import { formatError, logUnexpected } from './errors.js'

export { graphqlSchema, printedSchema } from './schema.js'

const Variables = { type: 'object', nullable: true, description: 'Values of the operation\'s variables' } as const
const OperationName = { type: 'string', nullable: true, maxLength: 200, description: 'Which operation of the document to run' } as const

export const GraphqlRequestBody = {
  type: 'object',
  additionalProperties: false,
  required: ['query'],
  properties: {
    query: { type: 'string', minLength: 1, description: 'A GraphQL document (the schema is at /graphql/schema.gql)' },
    variables: Variables,
    operationName: OperationName,
    extensions: { type: 'object', nullable: true, description: 'Protocol extensions (persisted queries are not supported)' }
  },
  example: { query: 'query ($limit: Int) { objects(limit: $limit) { id typeId attributes geometry workflowState } }', variables: { limit: 10 } }
} as const

const GraphqlGetQuery = {
  type: 'object' as const,
  additionalProperties: false,
  required: ['query'],
  properties: {
    query: { type: 'string', minLength: 1, description: 'A GraphQL query (mutations only by POST)' },
    variables: { type: 'string', description: 'JSON text of the variables' },
    operationName: { type: 'string', description: 'Which operation of the document to run' }
  }
}

const GraphqlResponse = {
  type: 'object',
  description: 'A GraphQL response. Errors carry extensions.code (the REST error code), extensions.status (the HTTP status REST ' +
    'would answer) and extensions.details; resolver errors come with HTTP 200, beside the data that could be read.',
  properties: {
    data: { type: 'object', nullable: true, additionalProperties: true },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['message'],
        properties: {
          message: { type: 'string' },
          path: { type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'integer' }] } },
          extensions: {
            type: 'object',
            properties: { code: { type: 'string' }, status: { type: 'integer' }, details: { type: 'object', additionalProperties: true } }
          }
        }
      }
    }
  }
} as const

const limitsText = (c: GraphqlLimits): string => `A document holds at most ${c.maxTokens} tokens and ${c.maxFields} fields, and an operation ${c.maxRootFields} root fields (aliases included). ` +
  `Depth is limited to ${MAX_DEPTH} nested selections and cost to ${MAX_COST} (each field costs 1; the selection ` +
  `under a field with a limit argument counts limit times), and variables nest at most ${MAX_JSON_DEPTH} levels deep; each refusal is ` +
  'HTTP 400 with extensions.code BAD_REQUEST naming the limit. ' +
  'The same authentication, rate limit, body-size limit, permissions and audit as REST apply.'

interface GraphqlLimits { maxTokens: number, maxFields: number, maxRootFields: number }

/**
 * A result's JSON text, one root field at a time with a turn of the event loop between them: a
 * document of 20 root fields of 100 items each is megabytes, and JSON.stringify of all of it at
 * once would hold the API's thread for tens of milliseconds, every other request waiting.
 */
export async function stringifyResult (result: FormattedExecutionResult): Promise<string> {
  const { data, ...rest } = result
  if (data === undefined || data === null) return JSON.stringify(result)
  const fields: string[] = []
  for (const [key, value] of Object.entries(data)) {
    if (fields.length > 0) await setImmediate()
    fields.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`)
  }
  const others = JSON.stringify(rest)
  return `{${others === '{}' ? '' : `${others.slice(1, -1)},`}"data":{${fields.join(',')}}}`
}

function createApollo (limits: GraphqlLimits): ApolloServer<GraphqlContext> {
  const apollo = new ApolloServer<GraphqlContext>({
    schema: graphqlSchema(),
    introspection: true,
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    persistedQueries: false,
    includeStacktraceInErrorResponses: false,
    parseOptions: { maxTokens: limits.maxTokens },
    validationRules: [sizeRule(limits), depthRule],
    formatError,
    stringifyResult,
    // Cache-control hints would cost a hook per resolved field and answer nothing here: tenant
    // data is never cacheable by a shared cache. No landing page: the schema is at /graphql/schema.gql.
    plugins: [costLimit(), logUnexpected(), ApolloServerPluginCacheControlDisabled(), ApolloServerPluginLandingPageDisabled()]
  })
  // Registrars are synchronous; requests wait for the start (a failed start fails them with a 500).
  apollo.startInBackgroundHandlingStartupErrorsByLoggingAndFailingAllRequests()
  return apollo
}

/** One GraphQL request through Apollo's framework-neutral entry point, answered like any route. */
async function execute (apollo: ApolloServer<GraphqlContext>, req: RouteRequest): Promise<Answer> {
  const headers = new HeaderMap()
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value)
  }
  const q = req.url.indexOf('?')
  const r = await apollo.executeHTTPGraphQLRequest({
    httpGraphQLRequest: { method: req.method.toUpperCase(), headers, search: q === -1 ? '' : req.url.slice(q), body: req.body },
    context: async () => graphqlContext(req.service)
  })
  const type = r.headers.get('content-type') ?? JSON_TYPE
  r.headers.delete('content-type')
  const bytes = r.body.kind === 'complete' ? r.body.string : Readable.from(r.body.asyncIterator)
  return { status: r.status ?? 200, headers: Object.fromEntries(r.headers), bytes, type }
}

export const graphqlRoutes: RouteModule = deps => {
  const apollo = createApollo(deps.config.graphql)
  const LIMITS_TEXT = limitsText(deps.config.graphql)
  const endpoint = { path: '/v1/graphql', tag: 'graphql', auth: 'bearer', feature: 'graphql', heavy: 'request', errors: [400] } satisfies Partial<RouteSpec>

  return [
    route({
      ...endpoint, method: 'post', operationId: 'graphql',
      summary: 'Run a GraphQL query or mutation',
      description: `Every operation of the schema at /graphql/schema.gql. ${LIMITS_TEXT} Only JSON bodies are accepted ` +
        '(Content-Type application/json or another +json type), so browsers cannot send one cross-site without a preflight. One operation per request (no batching).',
      body: GraphqlRequestBody,
      responses: { 200: { description: 'the result (errors, if any, in errors[])', schema: GraphqlResponse } },
      example: { summary: 'The first ten objects', body: GraphqlRequestBody.example, status: 200, after: ['createObjects'] }
    }, req => {
      parse(GraphqlRequestBody, req.body)
      return execute(apollo, req)
    }),

    route({
      ...endpoint, method: 'get', operationId: 'graphqlQuery',
      summary: 'Run a GraphQL query by GET (mutations only by POST)',
      description: 'Apollo\'s CSRF prevention applies: send the header `apollo-require-preflight: true` (or any non-empty ' +
        `\`x-apollo-operation-name\`), else the answer is 400. A mutation by GET is answered 405. ${LIMITS_TEXT}`,
      query: GraphqlGetQuery,
      headers: { 'apollo-require-preflight': { description: 'Any non-empty value (CSRF prevention); without it, or x-apollo-operation-name, the answer is 400', required: false, schema: { type: 'string' } } },
      responses: { 200: { description: 'the result (errors, if any, in errors[])', schema: GraphqlResponse } },
      example: { summary: 'Object ids and public ids by GET', query: { query: '{ objects(limit: 5) { id publicId } }' }, headers: { 'apollo-require-preflight': 'true' }, status: 200, after: ['createObjects'] }
    }, req => {
      // The documented parameters, checked like the POST body: a missing or empty query or an unknown
      // parameter is a 400 in the error body, before Apollo reads the request.
      parseQuery(GraphqlGetQuery, req.query)
      return execute(apollo, req)
    }),

    route({
      method: 'get', path: '/graphql/schema.gql', operationId: 'graphqlSchema', tag: 'graphql', auth: 'none',
      summary: 'The GraphQL schema (SDL), printed from the running schema',
      description: 'Public. The first line names the release the schema belongs to.',
      responses: { 200: { description: 'GraphQL SDL', contentType: 'text/plain', schema: { type: 'string' } } },
      example: { summary: 'The schema', status: 200 }
    }, () => ({ bytes: printedSchema(deps.config.release), type: 'text/plain; charset=utf-8' }))
  ]
}
