import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, engineOf, prepared, setEngine, withTransaction, type Db } from '../../lib/db.js'
import { TEST_DATABASE_URL } from '../support/env.js'

// lib/db `prepared` inside a transaction: the direct path (no knex runner) on the transaction's
// own connection, with knex's query events, and refused once the transaction is over; and the
// engine of a transaction is its pool's.

interface Seen { sql: string, uid: string, tx: unknown }

describe('lib/db prepared statements in a transaction', () => {
  let db: Db
  const seen: Seen[] = []
  const answered: string[] = []
  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 2 })
    db.on('query', (q: { sql: string, __knexQueryUid: string, __knexTxId?: unknown }) => seen.push({ sql: q.sql, uid: q.__knexQueryUid, tx: q.__knexTxId }))
    db.on('query-response', (_r: unknown, q: { __knexQueryUid: string }) => answered.push(q.__knexQueryUid))
    await db.raw('CREATE TABLE IF NOT EXISTS test_prepared_tx (tenant_id text NOT NULL, n int NOT NULL, PRIMARY KEY (tenant_id, n))')
    await db.raw("DELETE FROM test_prepared_tx WHERE tenant_id = 'prepared-tx'")
  })
  after(async () => {
    await db.raw('DROP TABLE IF EXISTS test_prepared_tx')
    await db.destroy()
  })

  const insert = (q: Parameters<typeof prepared>[0], n: number) =>
    prepared(q, 'test.prepared-tx.insert', "INSERT INTO test_prepared_tx (tenant_id, n) VALUES ('prepared-tx', ?) RETURNING n", [n])
  const count = (q: Parameters<typeof prepared>[0]) =>
    prepared(q, 'test.prepared-tx.count', "SELECT count(*)::int AS n FROM test_prepared_tx WHERE tenant_id = 'prepared-tx' AND n >= ?", [0])

  it('runs on the transaction\'s connection: sees its own writes, which roll back with it', async () => {
    await assert.rejects(withTransaction(db, async tx => {
      assert.equal((await insert(tx, 1)).rows[0].n, 1)
      assert.equal((await count(tx)).rows[0].n, 1)
      // Not visible outside the transaction before COMMIT.
      assert.equal((await count(db)).rows[0].n, 0)
      throw new Error('roll back')
    }), /roll back/)
    assert.equal((await count(db)).rows[0].n, 0)
    await withTransaction(db, async tx => { await insert(tx, 2) })
    assert.equal((await count(db)).rows[0].n, 1)
  })

  it('takes the direct path, with knex\'s query and response events on the pool, tagged with the transaction', async () => {
    seen.length = 0
    answered.length = 0
    await withTransaction(db, async tx => { await count(tx) })
    const statement = seen.find(s => s.sql.includes('test_prepared_tx'))
    assert.ok(statement !== undefined, seen.map(s => s.sql).join(' | '))
    // knex's own runner numbers its queries otherwise; BEGIN and COMMIT still go through it.
    assert.match(statement.uid, /^direct-/)
    assert.ok(typeof statement.tx === 'string' && statement.tx.length > 0)
    assert.ok(answered.includes(statement.uid))
    assert.ok(seen.some(s => /^BEGIN/i.test(s.sql)) && seen.some(s => /^COMMIT/i.test(s.sql)))
  })

  it('a database error rejects the statement and the transaction rolls back whole', async () => {
    await assert.rejects(withTransaction(db, async tx => {
      await insert(tx, 3)
      await insert(tx, 3)
    }), (err: { code?: string }) => err.code === 'CONFLICT' || /duplicate key/.test(String(err)))
    assert.equal((await prepared(db, 'test.prepared-tx.has', "SELECT count(*)::int AS n FROM test_prepared_tx WHERE tenant_id = 'prepared-tx' AND n = ?", [3])).rows[0].n, 0)
  })

  it('refuses a statement after the transaction has ended', async () => {
    let kept: Parameters<typeof prepared>[0] | null = null
    await withTransaction(db, async tx => { kept = tx })
    await assert.rejects(async () => prepared(kept!, 'test.prepared-tx.count', "SELECT count(*)::int AS n FROM test_prepared_tx WHERE tenant_id = 'prepared-tx' AND n >= ?", [0]), /already complete/)
  })

  it('gives a transaction the engine of its pool', async () => {
    const other = createDb(TEST_DATABASE_URL, { poolMax: 1 })
    try {
      setEngine(other, { kind: 'pglite', mvt: false, cursors: false })
      await withTransaction(other, async tx => {
        assert.equal(engineOf(tx).kind, 'pglite')
        await tx.transaction(async sp => { assert.equal(engineOf(sp).kind, 'pglite') })
      })
      await withTransaction(db, async tx => { assert.equal(engineOf(tx).kind, 'postgres') })
    } finally {
      await other.destroy()
    }
  })
})
