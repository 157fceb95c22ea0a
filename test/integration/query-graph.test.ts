import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, type Db } from '../../lib/db.js'
import * as objects from '../../lib/objects/index.js'
import * as relations from '../../lib/relations/index.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { fixture, type Fixture } from './query-fixtures.js'

//   E -feeds-> A -feeds-> B -feeds-> C -owns-> D -feeds-> F
//              ^                     |
//              +-------feeds---------+          (a cycle A -> B -> C -> A)
// plus B -> G (deleted relation) and A -> H (H deleted afterwards).
describe('query service: graph expansion', () => {
  let db: Db
  let f: Fixture
  const id: Record<string, string> = {}
  const rel: Record<string, string> = {}
  const nameOf = (objectId: string) => Object.keys(id).find(k => id[k] === objectId)
  const relName = (relationId: string) => Object.keys(rel).find(k => rel[k] === relationId)

  async function expand (start: string[], graph: Record<string, unknown>, extra: Record<string, unknown> = {}) {
    const r = await f.run({ ...extra, graph: { objectIds: start.map(k => id[k]), ...graph } })
    return {
      objects: r.objects.map((o: { id: string }) => nameOf(o.id)).sort(),
      relations: r.relations.map((x: { id: string }) => relName(x.id)).sort(),
      truncated: r.truncated,
      raw: r
    }
  }

  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 5 })
    f = await fixture(db, 'qgraph')
    for (const k of ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H']) id[k] = await f.object({ key: k })
    for (const [from, to, type] of [['A', 'B', 'feeds'], ['B', 'C', 'feeds'], ['C', 'A', 'feeds'], ['C', 'D', 'owns'], ['E', 'A', 'feeds'], ['D', 'F', 'feeds'], ['B', 'G', 'feeds'], ['A', 'H', 'feeds']]) {
      rel[from + to] = await f.relate(id[from], id[to], type)
    }
    await relations.deleteRelation(f.ctx, rel.BG)
    await objects.deleteObject(f.ctx, id.H, null)
  })
  after(() => db.destroy())

  it('outgoing: follows links from the start, one hop per depth, through the cycle', async () => {
    const d1 = await expand(['A'], { relationDirection: 'outgoing', maxDepth: 1 })
    assert.deepEqual([d1.objects, d1.relations, d1.truncated], [['A', 'B'], ['AB'], false])
    const d2 = await expand(['A'], { relationDirection: 'outgoing', maxDepth: 2 })
    assert.deepEqual([d2.objects, d2.relations], [['A', 'B', 'C'], ['AB', 'BC']])
    const d3 = await expand(['A'], { relationDirection: 'outgoing', maxDepth: 3 })
    assert.deepEqual([d3.objects, d3.relations], [['A', 'B', 'C', 'D'], ['AB', 'BC', 'CA', 'CD']])
    const d5 = await expand(['A'], { relationDirection: 'outgoing', maxDepth: 5 })
    assert.deepEqual([d5.objects, d5.relations], [['A', 'B', 'C', 'D', 'F'], ['AB', 'BC', 'CA', 'CD', 'DF']])
  })

  it('incoming: follows links to the start', async () => {
    const d1 = await expand(['A'], { relationDirection: 'incoming', maxDepth: 1 })
    assert.deepEqual([d1.objects, d1.relations], [['A', 'C', 'E'], ['CA', 'EA']])
    const d2 = await expand(['A'], { relationDirection: 'incoming', maxDepth: 2 })
    assert.deepEqual([d2.objects, d2.relations], [['A', 'B', 'C', 'E'], ['BC', 'CA', 'EA']])
  })

  it('all (the default): both directions; maxDepth defaults to 1', async () => {
    const d1 = await expand(['A'], {})
    assert.deepEqual([d1.objects, d1.relations], [['A', 'B', 'C', 'E'], ['AB', 'CA', 'EA']])
    const d5 = await expand(['F'], { maxDepth: 5 })
    assert.deepEqual([d5.objects, d5.relations], [['A', 'B', 'C', 'D', 'E', 'F'], ['AB', 'BC', 'CA', 'CD', 'DF', 'EA']])
    const d0 = await expand(['A'], { maxDepth: 0 })
    assert.deepEqual([d0.objects, d0.relations], [['A'], []])
  })

  it('relationTypes restricts the links followed; deleted relations and deleted objects are never followed', async () => {
    const owns = await expand(['C'], { relationTypes: ['owns'], maxDepth: 5 })
    assert.deepEqual([owns.objects, owns.relations], [['C', 'D'], ['CD']])
    const fromB = await expand(['B'], { relationDirection: 'outgoing', maxDepth: 1 })
    assert.deepEqual(fromB.objects, ['B', 'C'])
  })

  it('answers the documented shape: objects {id, typeId, attributes}, relations {id, fromObjectId, toObjectId, relationType, metadata}', async () => {
    const { raw } = await expand(['C'], { relationTypes: ['owns'] })
    assert.deepEqual(Object.keys(raw).sort(), ['objects', 'relations', 'truncated'])
    assert.deepEqual(raw.objects.find((o: { id: string }) => o.id === id.D), { id: id.D, typeId: f.typeId, attributes: { key: 'D' } })
    assert.deepEqual(raw.relations, [{ id: rel.CD, fromObjectId: id.C, toObjectId: id.D, relationType: 'owns', metadata: {} }])
  })

  it('with objectIds ignores filters and skips unknown ids; without, the filtered page is the start', async () => {
    const ignored = await expand(['A'], { maxDepth: 0 }, { filters: [{ field: 'attributes.key', operator: 'eq', value: 'F' }] })
    assert.deepEqual(ignored.objects, ['A'])
    const unknown = await f.run({ graph: { objectIds: ['00000000-0000-4000-8000-000000000000', id.D], maxDepth: 0 } })
    assert.deepEqual(unknown.objects.map((o: { id: string }) => o.id), [id.D])
    const fromQuery = await f.run({ filters: [{ field: 'attributes.key', operator: 'in', value: ['D', 'E'] }], limit: 1, graph: { relationDirection: 'outgoing' } })
    assert.deepEqual(fromQuery.objects.map((o: { id: string }) => nameOf(o.id)).sort(), ['D', 'F'])
  })

  it('follows relations as they were at asOf', async () => {
    const g = await fixture(db, 'qgraph-asof')
    const [x, y, z] = [await g.object({ k: 'x' }), await g.object({ k: 'y' }), await g.object({ k: 'z' })]
    await g.relate(x, y)
    const then = (await db.raw("SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS t")).rows[0].t
    await new Promise(resolve => setTimeout(resolve, 5))
    await g.relate(x, z)
    const now = await g.run({ graph: { objectIds: [x] } })
    assert.equal(now.objects.length, 3)
    const past = await g.run({ graph: { objectIds: [x] }, asOf: then })
    assert.deepEqual(past.objects.map((o: { id: string }) => o.id).sort(), [x, y].sort())
  })

  it('ends on a dense cyclic graph at maxDepth without blowing up', async () => {
    const g = await fixture(db, 'qgraph-dense')
    const ids: string[] = []
    for (let i = 0; i < 8; i++) ids.push(await g.object({ i }))
    for (const a of ids) for (const b of ids) if (a !== b) await g.relate(a, b)
    const t0 = performance.now()
    const r = await g.run({ graph: { objectIds: [ids[0]], maxDepth: 5 } })
    assert.equal(r.objects.length, 8)
    assert.equal(r.relations.length, 56)
    assert.equal(r.truncated, false)
    assert.ok(performance.now() - t0 < 5000)
  })

  it('returns the nearest 10,000 objects and truncated: true when more are reachable', async () => {
    const g = await fixture(db, 'qgraph-big')
    const hub = await g.object({ hub: true })
    await db.raw(`
      WITH o AS (
        INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, version, valid_from, created_at, updated_at)
        SELECT gen_random_uuid(), ?, ?, 1, gen_random_uuid()::text, jsonb_build_object('n', i), 1, now(), now(), now()
        FROM generate_series(1, 10050) i RETURNING id
      )
      INSERT INTO relations (id, tenant_id, from_object_id, to_object_id, relation_type, created_at, updated_at)
      SELECT gen_random_uuid(), ?, ?, o.id, 'spoke', now(), now() FROM o`, [g.ctx.tenantId, g.typeId, g.ctx.tenantId, hub])
    const r = await g.run({ graph: { objectIds: [hub] } })
    assert.equal(r.truncated, true)
    assert.equal(r.objects.length, 10_000)
    assert.equal(r.objects[0].id, hub)
    assert.equal(r.relations.length, 9_999)
    const small = await g.run({ graph: { objectIds: [hub], maxDepth: 0 } })
    assert.equal(small.truncated, false)
  })
})
