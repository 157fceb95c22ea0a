import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import pgUtils from 'pg/lib/utils.js'
import { PgBoss } from 'pg-boss'
import { createDb, prepared, withTransaction, type Db } from '../../lib/db.js'
import * as knexInternals from '../../lib/fenced/knex.js'
import { namedQuery, queryBytes } from '../../lib/fenced/pg.js'
import { guardedJob, inTransaction, jobInsert } from '../../lib/fenced/pg-boss.js'
import { createQueues } from '../../lib/queues/index.js'
import { AUTOMATION_RUN } from '../../lib/queues/index.js'
import { TEST_DATABASE_URL } from '../support/env.js'

// lib/fenced: the few places that use a library's internals (lib/fenced/README.md). Each test
// names what the code relies on; an upgrade that changes it fails here, not in production.

const require = createRequire(import.meta.url)
const installed = (name: string): string => (require(`${name}/package.json`) as { version: string }).version
const declared = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> }).dependencies

describe('lib/fenced: the versions its reliances were checked on', () => {
  it('pins knex, pg and pg-boss exactly, and finds those versions installed', () => {
    for (const [name, version] of [['knex', '3.3.0'], ['pg', '8.23.1'], ['pg-boss', '12.35.0']]) {
      assert.equal(declared[name], version, `package.json pins ${name}`)
      assert.equal(installed(name), version, `${name} installed`)
    }
    // tarn comes with knex; its events are relied on too.
    assert.equal(installed('tarn'), '3.1.2')
  })
})

describe('lib/fenced/knex.ts', () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 2 }) })
  after(async () => { if (!knexInternals.poolDestroyed(db)) await db.destroy() })

  it('knows a pool and its transactions as one, and lends the transaction\'s own connection inside it', async () => {
    await withTransaction(db, async tx => {
      assert.equal(knexInternals.poolIdentity(tx), knexInternals.poolIdentity(db))
      const conn = await knexInternals.acquire(tx)
      try {
        const inside = (await conn.query('SELECT txid_current_if_assigned() IS NOT NULL OR true AS ok, pg_backend_pid() AS pid')).rows[0]
        const viaKnex = (await tx.raw('SELECT pg_backend_pid() AS pid')).rows[0]
        assert.equal(inside.pid, viaKnex.pid, 'the same backend as the transaction')
      } finally {
        await knexInternals.release(tx, conn)
      }
    })
  })

  it('tells of demand on the pool (before it is queued), of waiters, and destroys a discarded connection', async () => {
    let asked = 0
    knexInternals.onPoolDemand(db, () => { asked++ })
    const before = asked
    await db.raw('SELECT 1')
    assert.ok(asked > before, 'acquireRequest heard')
    assert.equal(knexInternals.pendingAcquires(db), 0)
    assert.ok(knexInternals.tarnPool(db) !== null)
    const a = await knexInternals.acquire(db)
    const b = await knexInternals.acquire(db)
    const waiting = knexInternals.acquire(db)
    await new Promise(resolve => setImmediate(resolve))
    assert.equal(knexInternals.pendingAcquires(db), 1, 'a third caller waits on a pool of two')
    assert.deepEqual(knexInternals.poolCounts(db), { used: 2, idle: 0, waiting: 1 })
    const pid = a.processID
    knexInternals.discard(a, 'test')
    assert.ok(knexInternals.isDiscarded(a))
    await knexInternals.release(db, a)
    const c = await waiting
    assert.notEqual(c.processID, pid, 'the discarded connection was not handed out again')
    await knexInternals.release(db, b)
    await knexInternals.release(db, c)
  })

  it('emits knex\'s query events with the statement, as its own runner does', async () => {
    const conn = await knexInternals.acquire(db)
    const seen: string[] = []
    const listener = (q: { sql: string, __knexQueryUid?: string }) => { seen.push(`${q.sql} ${q.__knexQueryUid}`) }
    db.on('query', listener)
    try {
      knexInternals.emitQueryEvent(db, 'query', conn, { sql: 'SELECT 2', bindings: [], name: 'n', uid: 'u-1' })
    } finally {
      db.off('query', listener)
      await knexInternals.release(db, conn)
    }
    assert.deepEqual(seen, ['SELECT 2 u-1'])
  })

  it('knows a destroyed pool', async () => {
    const other = createDb(TEST_DATABASE_URL, { poolMax: 1 })
    await other.raw('SELECT 1')
    assert.equal(knexInternals.poolDestroyed(other), false)
    await other.destroy()
    assert.equal(knexInternals.poolDestroyed(other), true)
  })
})

describe('lib/fenced/pg.ts', () => {
  let client: pg.Client
  before(async () => { client = new pg.Client({ connectionString: TEST_DATABASE_URL }); await client.connect() })
  after(async () => { await client.end() })

  it('reads a bytea in the binary format, then leaves the connection to pg for the next query', async () => {
    const bytes = await queryBytes(client, 'fenced.bytes', 'SELECT decode($1, \'hex\') AS b', ['00ff10'])
    assert.deepEqual([...Buffer.concat(bytes)], [0x00, 0xff, 0x10])
    assert.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1)
    const again = await queryBytes(client, 'fenced.bytes', 'SELECT decode($1, \'hex\') AS b', ['abcd'])
    assert.deepEqual([...Buffer.concat(again)], [0xab, 0xcd])
  })

  it('runs a named statement from a Query it names, and pg remembers it as prepared', async () => {
    const r = await namedQuery(client, 'fenced.named', 'SELECT $1::int + 1 AS n', [41])
    assert.equal(r.rows[0].n, 42)
    assert.equal((client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements['fenced.named'], 'SELECT $1::int + 1 AS n')
    assert.equal(typeof pgUtils.prepareValue, 'function')
    assert.equal(pgUtils.prepareValue(new Date(0)) !== undefined, true)
  })
})

describe('lib/fenced/pg-boss.ts', () => {
  let boss: PgBoss
  let db: Db
  before(async () => {
    boss = new PgBoss({ connectionString: TEST_DATABASE_URL, schema: 'pgboss', supervise: false, schedule: false, migrate: false, max: 2 })
    boss.on('error', () => {})
    await boss.start()
    await createQueues(boss)
    db = createDb(TEST_DATABASE_URL, { poolMax: 2 })
  })
  after(async () => {
    await boss.stop({ graceful: false })
    await db.destroy()
  })

  it('recognises pg-boss\'s job insert and folds it behind a guard: one job exactly when the guard returns a row', async () => {
    const tenantId = `fenced-${randomUUID().slice(0, 8)}`
    const insert = await jobInsert(boss, AUTOMATION_RUN.name, { tenantId, runId: randomUUID() })
    const job = guardedJob(insert.text)
    const count = async () => Number((await db.raw("SELECT count(*) AS n FROM pgboss.job WHERE name = ? AND data->>'tenantId' = ?", [AUTOMATION_RUN.name, tenantId])).rows[0].n)
    for (const [guard, expected] of [['SELECT 1 AS x WHERE false', 0], ['SELECT 1 AS x', 1]] as const) {
      await prepared(db, `fenced.guard.${expected}+${job.name}`, `WITH guarded AS (${guard}), job AS (${job.text}) SELECT * FROM guarded`,
        job.order.map(i => insert.values[i]) as never[])
      assert.equal(await count(), expected)
    }
  })

  it('sends inside a knex transaction through the converted statement, committed or rolled back with it', async () => {
    const tenantId = `fenced-${randomUUID().slice(0, 8)}`
    const count = async () => Number((await db.raw("SELECT count(*) AS n FROM pgboss.job WHERE name = ? AND data->>'tenantId' = ?", [AUTOMATION_RUN.name, tenantId])).rows[0].n)
    await assert.rejects(withTransaction(db, async tx => {
      await boss.send(AUTOMATION_RUN.name, { tenantId, runId: randomUUID() }, { db: inTransaction(tx) })
      throw new Error('roll back')
    }), /roll back/)
    assert.equal(await count(), 0)
    await withTransaction(db, tx => boss.send(AUTOMATION_RUN.name, { tenantId, runId: randomUUID() }, { db: inTransaction(tx) }))
    assert.equal(await count(), 1)
  })
})
