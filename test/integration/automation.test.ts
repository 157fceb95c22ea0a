import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, withTransaction, type Db, type Queryable } from '../../lib/db.js'
import { callOnce } from '../../lib/automation/http.js'
import { pruneRuns } from '../../lib/automation/index.js'
import { claimRun } from '../../lib/automation/sql.js'
import { newTenant, testConfig } from '../support/harness.js'
import { startReceiver, type Receiver } from '../support/automation.js'
import { TEST_DATABASE_URL } from '../support/env.js'

describe('outgoing calls with WEBHOOK_ALLOW_PRIVATE_NETWORKS=false (the default)', () => {
  let r: Receiver
  before(async () => { r = await startReceiver() })
  after(() => r.close())

  it('refuses a loopback target, by address or by a name resolving to it, and sends nothing', async () => {
    const port = new URL(r.url).port
    for (const url of [r.url, `http://localhost:${port}/x`, `http://[::1]:${port}/`]) {
      const res = await callOnce({ url, method: 'POST', headers: {}, body: Buffer.from('{}') }, { allowPrivate: false, timeoutMs: 2000 })
      assert.equal(res.kind, 'refused', url)
      assert.match((res as { reason: string }).reason, /WEBHOOK_ALLOW_PRIVATE_NETWORKS/)
    }
    assert.equal(r.received.length, 0)
  })

  it('calls it when private networks are allowed, pinned to the checked address, keeping at most 64 KiB of the answer', async () => {
    r.replies = [{ status: 201, body: 'x'.repeat(100_000) }]
    const res = await callOnce({ url: `http://localhost:${new URL(r.url).port}/y`, method: 'POST', headers: { 'x-a': 'b' }, body: Buffer.from('{"k":1}') }, { allowPrivate: true, timeoutMs: 2000 })
    assert.equal(res.kind, 'response')
    if (res.kind !== 'response') return
    assert.equal(res.status, 201)
    assert.equal(res.address, '127.0.0.1')
    assert.equal(res.body.length, 64 * 1024)
    assert.equal(res.truncated, true)
    assert.equal(r.received.at(-1)?.body.toString(), '{"k":1}')
  })
})

describe('run retention', () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 2 }) })
  after(() => db.destroy())

  it('prunes succeeded and skipped runs after AUTOMATION_RUN_RETENTION_DAYS and failed ones after the longer age', async () => {
    const tenant = newTenant('retention')
    await db('tenants').insert({ id: tenant })
    const [rule] = await db('automation_rules').insert({ tenant_id: tenant }).returning('id')
    const day = 86_400_000
    const at = (daysAgo: number) => new Date(Date.now() - daysAgo * day)
    const runs = [['succeeded', 8], ['skipped', 8], ['dry_run', 8], ['succeeded', 2], ['failed', 8], ['failed', 31], ['queued', null]] as const
    for (const [i, [status, age]] of runs.entries()) {
      await db('automation_runs').insert({
        tenant_id: tenant, rule_id: rule.id, rule_version: 1, status, trigger: '{}', trigger_key: `k${i}`, input: '{}', finished_at: age === null ? null : at(age)
      })
    }
    const pruned = await pruneRuns(db, testConfig({ AUTOMATION_RUN_RETENTION_DAYS: '7', AUTOMATION_FAILED_RUN_RETENTION_DAYS: '30' }))
    assert.ok(pruned >= 4)
    const left = (await db('automation_runs').where({ tenant_id: tenant }).orderBy('trigger_key').select('trigger_key')).map(x => x.trigger_key)
    assert.deepEqual(left, ['k3', 'k4', 'k6'])
  })
})

describe("a run's transaction", () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 1 }) })
  after(() => db.destroy())

  it('commits asynchronously once the claim has locked the run, and only that transaction (README "Invariants")', async () => {
    const tenant = newTenant('async-commit')
    await db('tenants').insert({ id: tenant })
    const [rule] = await db('automation_rules').insert({ tenant_id: tenant }).returning('id')
    const [run] = await db('automation_runs').insert({ tenant_id: tenant, rule_id: rule.id, rule_version: 1, trigger: '{}', trigger_key: 'k', input: '{}' }).returning('id')
    const setting = async (q: Queryable) => (await q.raw('SHOW synchronous_commit')).rows[0].synchronous_commit
    // The session's own value first: a server may run with it off (the local Citus cluster does).
    await db.raw('SET synchronous_commit = on')
    const inside = await withTransaction(db, async tx => {
      const before = await setting(tx)
      const claimed = await claimRun(tx, tenant, run.id, false)
      assert.equal(claimed?.id, run.id)
      return [before, await setting(tx)]
    })
    // On Citus the claim is routed to the tenant's shard, and the setting is made in the shard's
    // transaction, which is the one that commits the run there; the coordinator's stays as it was.
    const citus = (await db.raw("SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'citus'")).rows[0].n === 1
    assert.deepEqual(inside, citus ? ['on', 'on'] : ['on', 'off'])
    assert.equal(await setting(db), 'on', 'the connection (one in this pool) is back to durable commits')
    await db.raw('RESET synchronous_commit')
  })
})
