import type { Feature } from '../../lib/license/index.js'
import type { GraphqlContext } from './context.js'
import type { GraphqlModule } from './common.js'

type Resolver = (parent: any, args: any, ctx: GraphqlContext, info: any) => unknown

/**
 * License feature switches on fields (docs/behaviour.md "Licensing": a switched-off module answers
 * FEATURE_DISABLED): each field first runs the check REST's `RouteSpec.feature` runs
 * (license.assertFeature), once per request and feature (GraphqlContext.requireFeature).
 */
export function gated (feature: Feature, fields: Record<string, Resolver>): Record<string, Resolver> {
  return Object.fromEntries(Object.entries(fields).map(([name, resolve]) => [name, async (p: unknown, a: unknown, c: GraphqlContext, i: unknown) => {
    await c.requireFeature(feature)
    return resolve(p, a, c, i)
  }]))
}

/** Root fields run in turn within a request (GraphqlContext.inTurn); GraphQL runs mutations in turn already. */
function inTurn (fields: Record<string, Resolver>): Record<string, Resolver> {
  return Object.fromEntries(Object.entries(fields).map(([name, resolve]) => [name, (p: unknown, a: unknown, c: GraphqlContext, i: unknown) =>
    c.inTurn(async () => await resolve(p, a, c, i))]))
}

/** A module's resolvers with its root fields (Query, Mutation) behind its feature, if it has one, and its queries in turn. */
export function moduleResolvers (m: GraphqlModule): Record<string, any> {
  const out = { ...m.resolvers }
  if (m.feature !== undefined) for (const root of ['Query', 'Mutation']) if (out[root] !== undefined) out[root] = gated(m.feature, out[root])
  if (out.Query !== undefined) out.Query = inTurn(out.Query)
  return out
}
