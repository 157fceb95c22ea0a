// Helpers shared by the query-*.test.ts files: a tenant with a permissive published type,
// objects created through lib (so history and indexes are real), and a run() shortcut.
import { randomUUID } from 'node:crypto'
import type { Db } from '../../lib/db.js'
import type { ServiceContext } from '../../lib/context.js'
import * as objectTypes from '../../lib/object-types/index.js'
import * as objects from '../../lib/objects/index.js'
import * as queries from '../../lib/queries/index.js'
import * as relations from '../../lib/relations/index.js'
import { newTenant, serviceContext } from '../support/harness.js'

export interface Fixture {
  ctx: ServiceContext
  typeId: string
  /** Creates an object; returns its id. */
  object: (attributes: Record<string, unknown>, geometry?: unknown) => Promise<string>
  relate: (from: string, to: string, relationType?: string) => Promise<string>
  run: (body: unknown) => Promise<any>
}

export async function fixture (db: Db, prefix = 'q'): Promise<Fixture> {
  const ctx = serviceContext(db, newTenant(prefix))
  const type = await objectTypes.createObjectType(ctx, {
    key: `t_${randomUUID().slice(0, 8)}`,
    name: 'query test type',
    attributeSchema: { type: 'object' },
    geometry: { required: false, types: ['Point', 'LineString', 'Polygon', 'MultiPoint', 'MultiPolygon', 'GeometryCollection'] }
  })
  await objectTypes.publishObjectType(ctx, type.id, { to: 'published' })
  return {
    ctx,
    typeId: type.id,
    object: async (attributes, geometry) => (await objects.createObject(ctx, { typeId: type.id, attributes, ...(geometry === undefined ? {} : { geometry }) })).id,
    relate: async (from, to, relationType = 'link') => (await relations.createRelation(ctx, { fromObjectId: from, toObjectId: to, relationType })).id,
    run: body => queries.runQuery(ctx, body)
  }
}

export const point = (x: number, y: number) => ({ type: 'Point', coordinates: [x, y] })
export const box = (x0: number, y0: number, x1: number, y1: number) => ({
  type: 'Polygon', coordinates: [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]]
})
