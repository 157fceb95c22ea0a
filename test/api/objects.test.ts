import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, newTenant, publishedType, type TestServer, type Client } from '../support/harness.js'

describe('objects API', () => {
  let s: TestServer
  let owner: Client
  let typeId: string
  before(async () => {
    s = await startServer()
    owner = s.as(newTenant(), ['owner'])
    typeId = await publishedType(owner, { geometry: { required: false, types: ['Point', 'Polygon'] } })
  })
  after(() => s.close())

  it('creates, reads and patches an object with If-Match', async () => {
    const created = await owner.post('/v1/objects', { typeId, attributes: { name: 'a', height: 3 }, geometry: { type: 'Point', coordinates: [13.4, 52.5] } })
    assert.equal(created.status, 201, created.text)
    assert.equal(created.body.version, 1)
    assert.equal(created.headers.get('etag'), '"1"')
    assert.equal(created.headers.get('location'), `/v1/objects/${created.body.id}`)
    const got = await owner.get(`/v1/objects/${created.body.id}`)
    assert.equal(got.status, 200)
    assert.deepEqual(got.body.geometry, { type: 'Point', coordinates: [13.4, 52.5] })
    const patched = await owner.patch(`/v1/objects/${created.body.id}`, { attributes: { height: null, name: 'b' } }, { 'If-Match': '"1"' })
    assert.equal(patched.status, 200, patched.text)
    assert.deepEqual(patched.body.attributes, { name: 'b' })
    assert.equal(patched.body.version, 2)
  })
})
