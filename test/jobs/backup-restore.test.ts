import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { newTenant, publishedType, startServer, type Client, type TestServer } from '../support/harness.js'
import { emptyDatabase, scratchDatabase } from '../support/automation.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { hexes, leafOf, mth, verifyConsistency, verifyInclusion, verifyTreeHead, type TreeHeadBody } from '../support/rfc9162.js'

// Backup and restore as docs/operations.md "Backing up and restoring" gives them: pg_dump -Fc of a
// tenant-filled database, pg_restore into an empty one, and a service started on the copy finds
// the same audit chain (every event proven), the same signed Merkle tree head, the same object
// histories, and goes on appending to the chain where it stopped.

const run = promisify(execFile)

async function onCitus (): Promise<boolean> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await c.connect()
  try {
    return (await c.query("SELECT 1 FROM pg_extension WHERE extname = 'citus'")).rowCount === 1
  } finally {
    await c.end()
  }
}

interface Event { id: string, sequence: number, hash: string }

/** What must survive: the tenant's events, tree head and every object's history. */
async function snapshot (c: Client, ids: string[]): Promise<{ events: Event[], head: TreeHeadBody, histories: unknown[] }> {
  const events = (await c.get('/v1/audit/events?limit=1000')).body.items as Event[]
  const head = (await c.get('/v1/audit/tree-head')).body
  const histories = await Promise.all(ids.map(async id => (await c.get(`/v1/objects/${id}/history`)).body))
  return { events, head, histories }
}

describe('backup and restore (pg_dump -Fc, pg_restore)', { timeout: 120_000 }, async () => {
  // A Citus coordinator's dump holds no shard: a cluster is backed up node by node (docs/operations.md).
  const skip = await onCitus() ? 'a Citus cluster is not backed up by one pg_dump' : false
  let source: { url: string, drop: () => Promise<void> }
  let target: { url: string, drop: () => Promise<void> }
  let dir: string
  before(async () => {
    if (skip !== false) return
    source = await scratchDatabase()
    target = await emptyDatabase()
    dir = await mkdtemp(path.join(tmpdir(), 'spatial-backup-'))
  })
  after(async () => {
    if (skip !== false) return
    await source.drop()
    await target.drop()
    await rm(dir, { recursive: true, force: true })
  })

  it('restores a copy whose audit chain, tree head and histories verify, and whose chain goes on', { skip }, async () => {
    const tenant = newTenant('backup')
    let s: TestServer = await startServer({ DATABASE_URL: source.url })
    let before: Awaited<ReturnType<typeof snapshot>>
    const ids: string[] = []
    try {
      const owner = s.as(tenant, ['owner'])
      const typeId = await publishedType(owner)
      for (let i = 0; i < 4; i++) {
        const r = await owner.post('/v1/objects', { typeId, attributes: { name: `o${i}` } })
        assert.equal(r.status, 201, r.text)
        ids.push(r.body.id)
      }
      for (let v = 1; v <= 2; v++) assert.equal((await owner.patch(`/v1/objects/${ids[0]}`, { attributes: { name: `o0 v${v + 1}` } }, { 'If-Match': `"${v}"` })).status, 200)
      assert.equal((await owner.delete(`/v1/objects/${ids[3]}`, { 'If-Match': '"1"' })).status, 204)
      before = await snapshot(owner, ids)
      assert.ok(verifyTreeHead(before.head))
      assert.equal(before.head.treeSize, before.events.length)
    } finally {
      await s.close()
    }

    const file = path.join(dir, 'spatial.dump')
    await run('pg_dump', ['-Fc', '-f', file, source.url])
    await run('pg_restore', ['--no-owner', '-d', target.url, file])

    s = await startServer({ DATABASE_URL: target.url })
    try {
      const owner = s.as(tenant, ['owner'])
      const after = await snapshot(owner, ids)
      assert.deepEqual(after.events, before.events)
      assert.deepEqual(after.histories, before.histories)
      assert.deepEqual([after.head.treeSize, after.head.rootHash], [before.head.treeSize, before.head.rootHash])
      assert.ok(verifyTreeHead(after.head))
      const leaves = [...after.events].reverse().map(e => Buffer.from(e.hash, 'hex'))
      assert.equal(after.head.rootHash, mth(leaves).toString('hex'))
      for (const e of after.events) {
        const proof = await owner.get(`/v1/audit/events/${e.id}/proof`)
        assert.equal(proof.body.valid, true, `event ${e.sequence}: ${proof.text}`)
        const inclusion = (await owner.get(`/v1/audit/events/${e.id}/inclusion-proof`)).body
        assert.ok(verifyInclusion(inclusion.leafIndex, inclusion.treeSize, leafOf(e.hash), hexes(inclusion.auditPath), Buffer.from(after.head.rootHash, 'hex')))
      }

      // The copy goes on where the original stopped: a new write extends the same tree.
      const typeId = (await owner.get('/v1/object-types')).body.items[0].id
      assert.equal((await owner.post('/v1/objects', { typeId, attributes: { name: 'after restore' } })).status, 201)
      const grown = (await owner.get(`/v1/audit/consistency-proof?first=${before.head.treeSize}`)).body
      const later = ((await owner.get('/v1/audit/events?limit=1000')).body.items as Event[]).reverse()
      assert.ok(later.length > before.events.length)
      assert.ok(verifyConsistency(before.head.treeSize, grown.secondSize, Buffer.from(before.head.rootHash, 'hex'), mth(later.map(e => Buffer.from(e.hash, 'hex'))), hexes(grown.proof)))
    } finally {
      await s.close()
    }
  })
})
