import type { PgBoss } from 'pg-boss'
import type { Knex } from 'knex'
import { engineOf, prepared, withTransaction } from '../lib/db.js'
import { guardedJob, inTransaction, jobInsert } from '../lib/fenced/pg-boss.js'
import type { JobSender } from '../lib/context.js'
import { announceQueued } from '../lib/queues/index.js'

// On a Citus cluster pg-boss's tables stay on the coordinator while the guard's table is
// distributed: one statement would mix them, so the guard and the send keep a transaction there.
const citus = new WeakMap<object, Promise<boolean>>()
function onCitus (db: Knex): Promise<boolean> {
  let c = citus.get(db)
  if (c === undefined) {
    c = db.raw("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS c").then(r => r.rows[0].c === true)
    c.catch(() => citus.delete(db))
    citus.set(db, c)
  }
  return c
}

/**
 * A JobSender over pg-boss that sends inside the caller's knex transaction when given one. Jobs
 * due at once are announced to the workers when they commit (lib/queues `announceQueued`); a
 * delayed one is left to the poll (the process that delays a retry wakes its own loops then).
 */
export function pgBossSender (boss: PgBoss): JobSender {
  return {
    async sendGuarded (db, queue, payload, guard) {
      let rows: unknown[]
      if (db.isTransaction || engineOf(db).kind !== 'postgres' || await onCitus(db as Knex)) {
        // Embedded (PGlite), Citus, or inside a caller's transaction: the guard, then the send, in one transaction.
        rows = await withTransaction(db, async tx => {
          const guarded = (await tx.raw(guard.sql, guard.bindings)).rows
          if (guarded.length > 0) await boss.send(queue, payload, { db: inTransaction(tx) })
          return guarded
        })
      } else {
        const insert = await jobInsert(boss, queue, payload)
        const job = guardedJob(insert.text)
        rows = (await prepared(db, `${guard.name}+job.${job.name}`, `WITH guarded AS (${guard.sql}), job AS (${job.text}) SELECT * FROM guarded`,
          [...guard.bindings, ...job.order.map(i => insert.values[i]) as Knex.RawBinding[]])).rows
      }
      if (rows.length > 0) announceQueued(db, queue)
      return rows
    },
    async send (queue, payload, opts) {
      const db = opts.db as Knex
      await boss.send(queue, payload, {
        ...(db.isTransaction ? { db: inTransaction(db as Knex.Transaction) } : {}),
        ...(opts.singletonKey !== undefined ? { singletonKey: opts.singletonKey } : {}),
        ...(opts.startAfterSeconds !== undefined ? { startAfter: opts.startAfterSeconds } : {})
      })
      if (opts.startAfterSeconds === undefined) announceQueued(db, queue)
    },
    async sendMany (queue, payloads, opts) {
      if (payloads.length === 0) return
      const db = opts.db as Knex
      await boss.insert(queue, payloads.map(data => ({ data })), db.isTransaction ? { db: inTransaction(db as Knex.Transaction) } : {})
      announceQueued(db, queue)
    }
  }
}
