import { makeExecutableSchema } from '@graphql-tools/schema'
import { printSchema, type GraphQLSchema } from 'graphql'
import { GRAPHQL_MODULES } from './modules.js'
import { moduleResolvers } from './features.js'

let built: GraphQLSchema | null = null

/** The executable schema, built once per process from GRAPHQL_MODULES. */
export function graphqlSchema (): GraphQLSchema {
  built ??= makeExecutableSchema({
    typeDefs: GRAPHQL_MODULES.map(m => m.typeDefs),
    resolvers: GRAPHQL_MODULES.map(moduleResolvers)
  })
  return built
}

/** GET /graphql/schema.gql: the SDL printed from the running schema, headed by the release. */
export function printedSchema (release: string): string {
  return `# Spatial Object, Workflow and Automation Service: GraphQL schema, release ${release}\n` +
    '# Endpoint: POST /v1/graphql (GET for queries). REST contract: /openapi/v1.json\n\n' +
    printSchema(graphqlSchema()) + '\n'
}
