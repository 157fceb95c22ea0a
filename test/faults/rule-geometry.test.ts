import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { newTenant, publishedType, startServer, type Client, type TestServer } from '../support/harness.js'

// Geofencing in validation rules runs turf on the main thread, where geoWithin of a polygon in a
// polygon is quadratic (two of 1,000 positions: 1.7 s): one evaluation reads at most 10,000
// positions (lib/jsonlogic.ts MAX_GEO_POSITIONS), refused beyond with a fault naming the rule.

/** A ring of `n` positions around (13.4, 52.5): a valid polygon. */
function circle (n: number, r: number): { type: 'Polygon', coordinates: number[][][] } {
  const ring = Array.from({ length: n }, (_, i) => [13.4 + r * Math.cos(2 * Math.PI * i / n), 52.5 + r * Math.sin(2 * Math.PI * i / n)])
  return { type: 'Polygon', coordinates: [[...ring, ring[0]]] }
}

describe('geofencing rules are bounded in the positions they read', { timeout: 60_000 }, () => {
  let s: TestServer
  let viewer: Client
  let owner: Client
  let typeId: string
  before(async () => {
    s = await startServer()
    const tenant = newTenant('geo')
    owner = s.as(tenant, ['owner'])
    typeId = await publishedType(owner, {
      geometry: { required: true, types: ['Point', 'Polygon'] },
      validationRules: [{ name: 'inZone', rule: { geoWithin: [{ var: 'geometry' }, circle(2000, 0.5)] }, message: 'must lie in the zone' }]
    })
    viewer = s.as(tenant, ['viewer'])
  })
  after(() => s.close())

  it('refuses a 1,000-position polygon in a 2,000-position zone fast, naming the rule (400 on a write, a fault on the dry run)', async () => {
    const t0 = performance.now()
    const res = await viewer.post(`/v1/object-types/${typeId}/validate`, { attributes: {}, geometry: circle(1000, 0.1) })
    const ms = performance.now() - t0
    assert.equal(res.status, 200, res.text.slice(0, 300))
    assert.equal(res.body.valid, false)
    assert.equal(res.body.errors[0].field, 'validationRules.inZone')
    assert.match(res.body.errors[0].reason, /could not be evaluated: geoWithin: .*more than 10000 positions/)
    assert.ok(ms < 1000, `answered in ${Math.round(ms)} ms`)
    const write = await owner.post('/v1/objects', { typeId, attributes: {}, geometry: circle(1000, 0.1) })
    assert.equal(write.status, 400)
    assert.equal(write.body.error.code, 'VALIDATION_ERROR')
    assert.equal(write.body.error.details.field, 'validationRules.inZone')
  })

  it('still evaluates a point in the same zone (2,001 positions read)', async () => {
    const inside = await viewer.post(`/v1/object-types/${typeId}/validate`, { attributes: {}, geometry: { type: 'Point', coordinates: [13.4, 52.5] } })
    assert.deepEqual([inside.status, inside.body.valid], [200, true], inside.text.slice(0, 300))
    const outside = await viewer.post(`/v1/object-types/${typeId}/validate`, { attributes: {}, geometry: { type: 'Point', coordinates: [14.4, 52.5] } })
    assert.deepEqual(outside.body.errors, [{ field: 'validationRules.inZone', reason: 'must lie in the zone' }])
  })
})
