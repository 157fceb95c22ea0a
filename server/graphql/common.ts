import bourne from '@hapi/bourne'
import { GraphQLError, GraphQLScalarType, Kind, valueFromASTUntyped } from 'graphql'
import { parseQuery } from '../../lib/validation.js'
import type { GraphqlContext } from './context.js'
import type { Feature } from '../../lib/license/index.js'

/** One module of the schema: SDL and its resolvers (server/graphql/modules.ts lists them all). */
export interface GraphqlModule {
  typeDefs: string
  resolvers: Record<string, any>
  /** The license feature of the module: its Query and Mutation fields answer FEATURE_DISABLED when it is off. */
  feature?: Feature
}

type Args = Record<string, unknown>

/**
 * Arguments of a list field -> the same validated, defaulted query object the REST route builds
 * from its query string (same JSON Schema, same VALIDATION_ERROR naming the argument).
 */
export function listArgs<T> (schema: object, args: Args): T {
  return parseQuery<T>(schema, present(args))
}

/** Drops arguments given as explicit null: for a filter, null means "not given". */
export function present (args: Args): Args {
  return Object.fromEntries(Object.entries(args).filter(([, v]) => v !== null && v !== undefined))
}

/** A `__proto__` key at any depth is refused as REST's body parser refuses it (co-body's bourne, BAD_REQUEST). */
function withoutProtoKeys (v: unknown): unknown {
  try {
    if (v !== null && typeof v === 'object') bourne.scan(v)
  } catch (err) {
    throw new GraphQLError((err as Error).message, { extensions: { code: 'BAD_REQUEST' } })
  }
  return v
}

const JsonScalar = new GraphQLScalarType({
  name: 'JSON',
  description: 'Any JSON value (object, array, string, number, boolean or null)',
  serialize: v => v,
  parseValue: withoutProtoKeys,
  parseLiteral: (ast, variables) => withoutProtoKeys(valueFromASTUntyped(ast, variables))
})

const DateTimeScalar = new GraphQLScalarType({
  name: 'DateTime',
  description: 'ISO 8601 timestamp, e.g. 2026-01-02T03:04:05.678Z (responses are UTC with milliseconds)',
  serialize: v => v,
  parseValue: v => v,
  // A malformed time is refused by the lib validators with VALIDATION_ERROR naming the argument.
  parseLiteral: ast => ast.kind === Kind.STRING ? ast.value : undefined
})

export const common: GraphqlModule = {
  typeDefs: /* GraphQL */ `
    "Any JSON value (object, array, string, number, boolean or null)"
    scalar JSON
    "ISO 8601 timestamp, e.g. 2026-01-02T03:04:05.678Z"
    scalar DateTime

    "The pagination envelope of every REST list (SPEC section 2)"
    type Pagination {
      limit: Int!
      offset: Int!
      total: Int!
      hasMore: Boolean!
    }

    enum SortOrder { asc desc }

    "Who made a change: the token's subject and roles"
    type Actor {
      sub: String!
      roles: [String!]!
    }

    "Stages of a versioned definition (object types, rules): draft -> sandbox -> published"
    enum VersionStatus { draft sandbox published }

    "Where publish moves the latest version (from draft to published it passes sandbox)"
    enum PublishTarget { sandbox published }

    "One version of a versioned definition (REST: /v1/schema-registry/...)"
    type SchemaVersion {
      version: Int!
      status: VersionStatus!
      definition: JSON!
      createdAt: DateTime!
      createdBy: String
      sandboxAt: DateTime
      publishedAt: DateTime
    }

    """
    GraphQL on the same services as REST under /v1. Errors carry extensions.code with the REST
    error code (VALIDATION_ERROR, FORBIDDEN, NOT_FOUND, VERSION_CONFLICT, ...), extensions.status
    with the HTTP status REST would answer, and extensions.details as REST's error.details.
    Query fields are nullable: a refused or failed field is null, with its error in errors[],
    while the other fields of the request still resolve.
    """
    type Query {
      "The release this schema belongs to"
      release: String!
    }

    type Mutation
  `,
  resolvers: {
    JSON: JsonScalar,
    DateTime: DateTimeScalar,
    Query: {
      release: (_p: unknown, _a: unknown, c: GraphqlContext) => c.service.config.release
    }
  }
}
