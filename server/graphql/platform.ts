import * as access from '../../lib/access/index.js'
import type { GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

export const platformModule: GraphqlModule = {
  typeDefs: /* GraphQL */ `
    "The caller: identity, roles and effective permissions (like GET /v1/auth/me)"
    type Me {
      sub: String!
      tenant: String!
      roles: [String!]!
      scope: String
      "resource -> actions, e.g. {\\"objects\\": [\\"read\\", \\"write\\"]}"
      permissions: JSON!
      authDisabled: Boolean!
    }

    extend type Query {
      me: Me!
    }
  `,
  resolvers: {
    Query: {
      me: (_: unknown, _a: unknown, c: GraphqlContext) => access.describeCaller(c.service)
    }
  }
}
