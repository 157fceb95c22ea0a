import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { newTenant, token } from '../support/harness.js'
import { TEST_JWT_SECRET } from '../support/env.js'
import { startService, type Service } from '../support/service.js'
import { openSse, changesOf } from '../support/sse.js'

// Embedded mode (one process on PGlite) serves the change feed and its live stream: the
// notification that wakes the stream is the process's own (lib/settings, in process).
describe('the change feed in embedded mode', { timeout: 900_000 }, () => {
  let svc: Service
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'changes-embedded-'))
  const auth = { Authorization: `Bearer ${token({ tenant: newTenant('emb'), roles: ['owner'] })}` }
  const call = async (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(svc.base + p, { method, headers: { ...auth, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) })
    return { status: r.status, body: await r.json() as any }
  }
  before(async () => { svc = await startService('embedded', { dataDir, env: { AUTH_JWT_SECRET: TEST_JWT_SECRET, CHANGES_HEARTBEAT_SECONDS: '1' } }) })
  after(async () => {
    await svc?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('pages the feed and streams a change as it commits', async () => {
    const type = await call('POST', '/v1/object-types', { key: 'pole', name: 'Pole', attributeSchema: { type: 'object' } })
    assert.equal(type.status, 201)
    assert.equal((await call('POST', `/v1/object-types/${type.body.id}/publish`, { to: 'published' })).status, 200)
    const first = await call('POST', '/v1/objects', { typeId: type.body.id, attributes: { n: 1 }, geometry: { type: 'Point', coordinates: [13.4, 52.5] } })
    assert.equal(first.status, 201)
    const page = await call('GET', '/v1/changes?bbox=13,52,14,53')
    assert.equal(page.status, 200)
    assert.deepEqual(page.body.changes.map((c: any) => [c.kind, c.objectId, c.object.attributes.n]), [['created', first.body.id, 1]])

    const stream = await openSse(`${svc.base}/v1/changes?since=${page.body.nextCursor}`, auth)
    try {
      assert.equal(stream.status, 200)
      const moved = await call('PATCH', `/v1/objects/${first.body.id}`, { geometry: { type: 'Point', coordinates: [2, 48] } }, { 'If-Match': '1' })
      assert.equal(moved.status, 200)
      const events = await stream.until('the update', e => changesOf(e).length >= 1, 30_000)
      assert.deepEqual(changesOf(events).map(c => [c.kind, c.version]), [['updated', 2]])
      await stream.until('a heartbeat', e => e.some(x => x.comment === 'heartbeat'), 10_000)
    } finally { stream.close() }
  })
})
