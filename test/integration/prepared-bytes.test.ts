import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, joinBytes, preparedBytes as pieces, type Bindings, type Db, type Queryable } from '../../lib/db.js'
import { TEST_DATABASE_URL } from '../support/env.js'

// lib/fenced/pg.ts through lib/db preparedBytes: a bytea read in the binary result format, beside
// pg's own text path, on one pool connection (so every call shares the connection's state).

// n bytes counting 0, 1, ..., 255, 0, ...: most are not valid UTF-8 (a text read would mangle them).
const BYTES = `SELECT decode(string_agg(lpad(to_hex(i % 256), 2, '0'), '' ORDER BY i), 'hex') AS b
  FROM generate_series(0, ?::int - 1) i`

const expected = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => i % 256))

// The bytes as one buffer (preparedBytes gives the pieces they arrived in).
const preparedBytes = async (db: Queryable, name: string, sql: string, bindings: Bindings): Promise<Buffer> => joinBytes(await pieces(db, name, sql, bindings))

describe('lib/db preparedBytes (binary bytea)', () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 1 }) })
  after(() => db.destroy())

  it('returns the exact bytes, small and spanning many socket reads, equal to the text path', async () => {
    for (const n of [1, 300, 70_000, 1_000_000]) {
      const got = await preparedBytes(db, 'test.bytes', BYTES, [n])
      assert.ok(got.equals(expected(n)), `${n} bytes`)
      const text = (await db.raw(BYTES, [n])).rows[0].b as Buffer
      assert.ok(got.equals(text))
    }
  })

  it('hands a large value on in the pieces it arrived in, none copied (views of the socket reads)', async () => {
    const parts = await pieces(db, 'test.bytes', BYTES, [1_000_000])
    assert.ok(parts.length > 1, `${parts.length} pieces`)
    assert.equal(parts.reduce((n, p) => n + p.length, 0), 1_000_000)
    // Each piece is a view into memory that a socket read filled, not a buffer of its own.
    assert.ok(parts.some(p => p.buffer.byteLength > p.length || p.byteOffset > 0))
    assert.ok(joinBytes(parts).equals(expected(1_000_000)))
  })

  it('reads the first row only', async () => {
    const rows = "SELECT decode(lpad(to_hex(i), 2, '0'), 'hex') AS b FROM generate_series(?::int, 3) i ORDER BY i"
    assert.ok((await preparedBytes(db, 'test.bytes.rows', rows, [1])).equals(Buffer.from([1])))
    assert.ok((await preparedBytes(db, 'test.bytes.rows', rows, [2])).equals(Buffer.from([2])))
  })

  it('gives an empty buffer for NULL and for no row', async () => {
    assert.equal((await preparedBytes(db, 'test.bytes.null', 'SELECT NULL::bytea AS b WHERE ?::int = 1', [1])).length, 0)
    assert.equal((await preparedBytes(db, 'test.bytes.null', 'SELECT NULL::bytea AS b WHERE ?::int = 1', [2])).length, 0)
    assert.equal((await preparedBytes(db, 'test.bytes.empty', "SELECT ''::bytea AS b WHERE ?::int = 1", [1])).length, 0)
  })

  it('rejects with the database error and leaves the connection usable (statement kept, queue moving)', async () => {
    const failing = 'SELECT decode(repeat(?::text, 2), \'hex\') AS b'
    await assert.rejects(preparedBytes(db, 'test.bytes.fail', failing, ['zz']), /invalid hexadecimal digit/)
    assert.ok((await preparedBytes(db, 'test.bytes.fail', failing, ['ab'])).equals(Buffer.from([0xab, 0xab])))
    // A statement that fails to parse is not recorded as prepared: the next call parses again.
    await assert.rejects(preparedBytes(db, 'test.bytes.bad', 'SELECT nope(?) AS b', [1]), /does not exist/)
    await assert.rejects(preparedBytes(db, 'test.bytes.bad', 'SELECT nope(?) AS b', [1]), /does not exist/)
    // A statement of another shape (two columns) fails, and the connection reads on correctly.
    await assert.rejects(preparedBytes(db, 'test.bytes.two', 'SELECT ?::bytea AS a, 2 AS b', ['\\x01']), /expected one column/)
    assert.equal((await db.raw('SELECT 41 + ?::int AS n', [1])).rows[0].n, 42)
    // Inside a transaction the text path runs, with the same answer.
    await db.transaction(async tx => {
      assert.ok((await preparedBytes(tx, 'test.bytes', BYTES, [1000])).equals(expected(1000)))
    })
  })

  it('serves many concurrent calls on one connection in order', async () => {
    const sizes = Array.from({ length: 40 }, (_, i) => 1 + i * 997)
    const got = await Promise.all(sizes.map(n => preparedBytes(db, 'test.bytes', BYTES, [n])))
    sizes.forEach((n, i) => assert.ok(got[i].equals(expected(n)), `${n} bytes`))
    const r = await db.raw('SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = ?', ['test.bytes'])
    assert.equal(r.rows[0].n, 1)
  })
})
