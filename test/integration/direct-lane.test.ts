import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { createDb, prepared, withTransaction, type Db } from '../../lib/db.js'
import { TEST_DATABASE_URL } from '../support/env.js'

// lib/db's direct statements on the pool keep the connection they used for the next one (no
// acquire and release through the pool each time), and hand it back whenever anyone else asks the
// pool for one, when the pool is destroyed, and after a moment of idleness. A pool of one makes
// any connection kept too long a hang.

interface TarnPool {
  on: (event: string, fn: () => void) => void
  numUsed: () => number
}
const poolOf = (db: Db): TarnPool => (db.client as { pool: TarnPool }).pool

async function backend (db: Db): Promise<number> {
  return (await prepared(db, 'test.lane.pid', 'SELECT pg_backend_pid() AS pid WHERE ?::int = 1', [1])).rows[0].pid
}

describe('lib/db direct statements: the kept connection', () => {
  let db: Db
  let asked = 0
  before(() => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 1 })
    poolOf(db).on('acquireRequest', () => { asked++ })
  })
  after(async () => { await db.destroy() })

  it('runs consecutive statements on one connection without asking the pool again', async () => {
    const first = await backend(db)
    const before = asked
    for (let i = 0; i < 5; i++) assert.equal(await backend(db), first)
    assert.equal(asked, before, 'no acquire through the pool')
    assert.equal(poolOf(db).numUsed(), 1, 'kept between statements')
  })

  it('hands it to knex\'s own queries, transactions and a second statement in flight (a pool of one)', async () => {
    const pid = await backend(db)
    assert.equal((await db.raw('SELECT pg_backend_pid() AS pid')).rows[0].pid, pid)
    await withTransaction(db, async tx => {
      assert.equal((await tx.raw('SELECT pg_backend_pid() AS pid')).rows[0].pid, pid)
      // A direct statement in the transaction runs on the transaction's connection.
      assert.equal(await backend(tx as unknown as Db), pid)
    })
    const both = await Promise.all([backend(db), backend(db), backend(db)])
    assert.deepEqual(both, [pid, pid, pid])
  })

  it('gives it back to the pool after a moment of idleness', async () => {
    await backend(db)
    assert.equal(poolOf(db).numUsed(), 1)
    const deadline = Date.now() + 2000
    while (poolOf(db).numUsed() > 0 && Date.now() < deadline) await sleep(20)
    assert.equal(poolOf(db).numUsed(), 0)
  })

  it('never runs a statement on a kept connection that broke', async () => {
    const pid = await backend(db)
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await admin.connect()
    try {
      assert.equal((await admin.query('SELECT pg_terminate_backend($1::int) AS done', [pid])).rows[0].done, true)
    } finally {
      await admin.end()
    }
    await sleep(50) // the socket's end reaches the client (knex marks the connection broken)
    const next = await backend(db)
    assert.notEqual(next, pid)
  })

  it('lets the pool be destroyed while a connection is kept', async () => {
    const other = createDb(TEST_DATABASE_URL, { poolMax: 1 })
    await backend(other)
    assert.equal(poolOf(other).numUsed(), 1)
    // The 3 s limit is cancelled once destroy is done, so its timer does not hold the test open.
    const limit = new AbortController()
    const tooLong = sleep(3000, undefined, { signal: limit.signal }).then(() => { throw new Error('destroy waited for the kept connection') }, () => {})
    try {
      await Promise.race([other.destroy(), tooLong])
    } finally {
      limit.abort()
    }
  })
})
