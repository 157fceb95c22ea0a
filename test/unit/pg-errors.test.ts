import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, translatePgError } from '../../lib/db.js'
import { AppError } from '../../lib/errors.js'
import { TEST_DATABASE_URL } from '../support/env.js'

// lib/db translatePgError reads PostgreSQL's error code, never its message: the message comes in
// the server's lc_messages language.

describe('translatePgError', () => {
  it('makes a cancelled statement (57014) NOT_READY whatever language the server speaks', () => {
    for (const message of ['canceling statement due to statement timeout', 'storniere Anfrage wegen Zeitüberschreitung der Anweisung']) {
      const e = translatePgError(Object.assign(new Error(message), { code: '57014' }))
      assert.ok(e instanceof AppError)
      assert.equal(e.code, 'NOT_READY')
      assert.equal(e.details.reason, 'statement timeout')
      assert.doesNotMatch(e.message, /storniere|canceling/)
    }
  })

  it('makes a geometry objects_geometry refused (PW002) a 400 on geometry with its reason and location', () => {
    const e = translatePgError(Object.assign(new Error('invalid geometry: Self-intersection'), { code: 'PW002', detail: '{"n": 0, "reason": "Self-intersection", "location": [0.5, 0.5]}' }))
    assert.ok(e instanceof AppError)
    assert.equal(e.code, 'VALIDATION_ERROR')
    assert.deepEqual(e.details, { field: 'geometry', reason: 'Self-intersection', location: [0.5, 0.5] })
    assert.match(e.message, /Self-intersection at \[0\.5, 0\.5\]\); fix it, or set geometry\.makeValid/)
  })

  it('makes a database that went away or cannot be reached NOT_READY (database unavailable)', () => {
    const lost = [
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('connection failure'), { code: '08006' }),
      Object.assign(new AggregateError([], 'connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      // A statement written to a socket the server has just closed (a fast shutdown), and a host
      // whose name does not resolve for now (a database service being replaced).
      Object.assign(new Error('Cannot call write after a stream was destroyed'), { code: 'ERR_STREAM_DESTROYED' }),
      Object.assign(new Error('write after end'), { code: 'ERR_STREAM_WRITE_AFTER_END' }),
      Object.assign(new Error('getaddrinfo EAI_AGAIN postgres'), { code: 'EAI_AGAIN' }),
      // node-postgres's own messages (the client's, not the server's language).
      new Error('Connection terminated unexpectedly'),
      new Error('Client has encountered a connection error and is not queryable'),
      Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' })
    ]
    for (const err of lost) {
      const e = translatePgError(err)
      assert.ok(e instanceof AppError, err.message)
      assert.equal(e.code, 'NOT_READY')
      assert.equal(e.details.reason, 'database unavailable')
    }
  })

  it('makes a server with no connection slot for us (53300) NOT_READY, not a 500', async () => {
    // A real refusal: a role allowed no connections at all gets the same SQLSTATE as a server at
    // max_connections (superusers are exempt from both limits, so the role is not one).
    const admin = createDb(TEST_DATABASE_URL, { poolMax: 1 })
    const role = `pw_no_slot_${process.pid}`
    await admin.raw(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`)
    const limited = createDb(Object.assign(new URL(TEST_DATABASE_URL), { username: role }).toString(), { poolMax: 1 })
    try {
      const err = await limited.raw('select 1').then(() => null, (e: unknown) => e)
      assert.equal((err as { code?: string } | null)?.code, '53300')
      const e = translatePgError(err)
      assert.ok(e instanceof AppError)
      assert.equal(e.code, 'NOT_READY')
      assert.equal(e.details.reason, 'database out of resources')
    } finally {
      await limited.destroy()
      await admin.raw(`DROP ROLE ${role}`)
      await admin.destroy()
    }
  })

  it('leaves an error it does not know as it is', () => {
    const err = Object.assign(new Error('x'), { code: 'XX000' })
    assert.equal(translatePgError(err), err)
  })
})
