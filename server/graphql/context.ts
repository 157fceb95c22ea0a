import DataLoader from 'dataloader'
import type { ServiceContext } from '../../lib/context.js'
import * as objects from '../../lib/objects/index.js'
import * as objectTypes from '../../lib/object-types/index.js'
import * as relations from '../../lib/relations/index.js'
import * as license from '../../lib/license/index.js'

/**
 * Per-request batching: every per-item field (an object's type, relations, related objects, a
 * relation's ends) goes through one of these loaders, so a page of N objects costs one statement
 * per field, not N. Loaders live for one request (their cache never outlives a permission check).
 */
export function createLoaders (ctx: ServiceContext) {
  const byId = <V>(fetch: (ids: readonly string[]) => Promise<Map<string, V>>) =>
    new DataLoader<string, V | null>(async ids => {
      const found = await fetch(ids)
      return ids.map(id => found.get(id) ?? null)
    })
  const relationLoaders = new Map<string, DataLoader<string, relations.RelationDto[]>>()
  return {
    objects: byId(ids => objects.getObjectsByIds(ctx, ids)),
    objectTypes: byId(ids => objectTypes.getObjectTypesByIds(ctx, ids)),
    /** One loader per distinct argument set (direction, relationType, includeDeleted, limit). */
    relations (f: relations.PerObjectFilter): DataLoader<string, relations.RelationDto[]> {
      const key = JSON.stringify([f.direction, f.relationType ?? null, f.includeDeleted, f.limit])
      let loader = relationLoaders.get(key)
      if (loader === undefined) {
        loader = new DataLoader(async ids => {
          const grouped = await relations.relationsOfObjects(ctx, ids, f)
          return ids.map(id => grouped.get(id) ?? [])
        })
        relationLoaders.set(key, loader)
      }
      return loader
    }
  }
}

export type Loaders = ReturnType<typeof createLoaders>

/** What every resolver receives: the same ServiceContext a REST route gets, and the loaders. */
export interface GraphqlContext {
  service: ServiceContext
  loaders: Loaders
  /** license.assertFeature, run once per request and feature (server/graphql/features.ts). */
  requireFeature: (feature: license.Feature) => Promise<void>
  /**
   * Runs the request's root fields one after another (server/graphql/features.ts): a document's
   * aliases would otherwise each take a pool connection at once, and the tenant's share of the
   * API (TENANT_MAX_CONCURRENT_REQUESTS) counts requests, not connections.
   */
  inTurn: <T>(run: () => Promise<T>) => Promise<T>
}

export function graphqlContext (request: ServiceContext): GraphqlContext {
  // The document's root fields share one QUERY_STATEMENT_TIMEOUT_MS for their costly statements.
  const service: ServiceContext = { ...request, sharedCost: { deadline: null } }
  const checked = new Map<license.Feature, Promise<void>>()
  const requireFeature = (feature: license.Feature) => {
    let check = checked.get(feature)
    if (check === undefined) {
      check = license.assertFeature(service, feature)
      checked.set(feature, check)
    }
    return check
  }
  let last: Promise<unknown> = Promise.resolve()
  const inTurn = <T>(run: () => Promise<T>): Promise<T> => {
    const next = last.then(run, run)
    last = next.catch(() => {})
    return next
  }
  return { service, loaders: createLoaders(service), requireFeature, inTurn }
}
