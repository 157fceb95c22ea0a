import { fromKnex, type PgBoss } from 'pg-boss'
import type { Knex } from 'knex'
import { createHash } from 'node:crypto'
import { engineOf, prepared, withTransaction } from '../lib/db.js'
import type { JobSender } from '../lib/context.js'
import { QUEUES, type QueueContract } from '../lib/queues/index.js'

/**
 * Creates every queue of the contract (idempotent: createQueue twice is fine) and applies the
 * contract's options to queues that already exist, so a changed option takes effect on deploy.
 * The policy is fixed at creation (pg-boss refuses to change it), so it is not re-applied.
 */
export async function createQueues (boss: PgBoss): Promise<void> {
  for (const q of QUEUES) {
    await boss.createQueue(q.name, { ...q.options })
    const { policy: _fixedAtCreation, ...changeable } = q.options as QueueContract['options']
    await boss.updateQueue(q.name, changeable)
  }
}

// pg-boss's statements inside a caller's transaction, as prepared statements: a job insert's text
// is fixed per queue, so each connection plans it once instead of at every send (it joins the
// queue's options; about half a millisecond of database CPU per ingress call), and its $N
// placeholders are turned into knex's ? once per text instead of at every send.
interface Converted { text: string, order: number[], name: string }
const converted = new Map<string, Converted>()

function convert (text: string): Converted {
  let c = converted.get(text)
  if (c === undefined) {
    const parts: string[] = []
    const order: number[] = []
    const re = /\$(\d+)/g
    let last = 0
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      parts.push(text.slice(last, m.index))
      order.push(Number(m[1]) - 1)
      last = re.lastIndex
    }
    parts.push(text.slice(last))
    // Literal ? (jsonb operators) escaped for knex, as pg-boss's own fromKnex does.
    const name = `pgboss.${createHash('sha256').update(text).digest('base64url').slice(0, 16)}`
    c = { text: parts.map(part => part.replace(/\?/g, '\\?')).join('?'), order, name }
    if (converted.size >= 200) converted.clear()
    converted.set(text, c)
  }
  return c
}

function inTransaction (tx: Knex.Transaction): { executeSql: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> } {
  if (engineOf(tx).kind !== 'postgres') return fromKnex(tx)
  return {
    async executeSql (text, values = []) {
      const c = convert(text)
      const r = await tx.raw(c.text, c.order.map(i => values[i]) as Knex.RawBinding[]).options({ name: c.name })
      return { rows: r.rows }
    }
  }
}

// A job insert made conditional on the rows of a guard CTE `guarded`: pg-boss's own statement for
// the queue, whose one jobs parameter ($1, a JSON array) becomes '[]' when the guard returned no
// row. Cached per text.
const guardedTexts = new Map<string, { text: string, order: number[], name: string }>()

function guardedJob (text: string): { text: string, order: number[], name: string } {
  let c = guardedTexts.get(text)
  if (c === undefined) {
    if (!/^\s*INSERT INTO\b/i.test(text) || !/json_to_recordset\(\$1::text::json\)/.test(text)) throw new Error('pg-boss job insert not recognised; cannot fold it into a guarded statement')
    const order: number[] = []
    const escaped = text.replace(/\?/g, '\\?')
    const folded = escaped.replace(/\$(\d+)/g, (_m, n: string) => {
      order.push(Number(n) - 1)
      return n === '1' ? "(CASE WHEN EXISTS (SELECT 1 FROM guarded) THEN ?::text ELSE '[]' END)" : '?'
    })
    c = { text: folded, order, name: createHash('sha256').update(text).digest('base64url').slice(0, 16) }
    if (guardedTexts.size >= 100) guardedTexts.clear()
    guardedTexts.set(text, c)
  }
  return c
}

/** pg-boss's statement and parameters for sending `payload`, without running it. */
async function jobInsert (boss: PgBoss, queue: string, payload: object): Promise<{ text: string, values: unknown[] }> {
  let captured: { text: string, values: unknown[] } | null = null
  await boss.send(queue, payload, { db: { executeSql: async (text: string, values: unknown[] = []) => { captured = { text, values }; return { rows: [{ id: null }] } } } })
  if (captured === null) throw new Error(`pg-boss sent no statement for ${queue}`)
  return captured
}

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

/** A JobSender over pg-boss that sends inside the caller's knex transaction when given one. */
export function pgBossSender (boss: PgBoss): JobSender {
  return {
    async sendGuarded (db, queue, payload, guard) {
      if (db.isTransaction || engineOf(db).kind !== 'postgres' || await onCitus(db as Knex)) {
        // Embedded (PGlite), Citus, or inside a caller's transaction: the guard, then the send, in one transaction.
        return withTransaction(db, async tx => {
          const rows = (await tx.raw(guard.sql, guard.bindings)).rows
          if (rows.length > 0) await boss.send(queue, payload, { db: inTransaction(tx) })
          return rows
        })
      }
      const insert = await jobInsert(boss, queue, payload)
      const job = guardedJob(insert.text)
      const r = await prepared(db, `${guard.name}+job.${job.name}`, `WITH guarded AS (${guard.sql}), job AS (${job.text}) SELECT * FROM guarded`,
        [...guard.bindings, ...job.order.map(i => insert.values[i]) as Knex.RawBinding[]])
      return r.rows
    },
    async send (queue, payload, opts) {
      const db = opts.db as Knex
      await boss.send(queue, payload, {
        ...(db.isTransaction ? { db: inTransaction(db as Knex.Transaction) } : {}),
        ...(opts.singletonKey !== undefined ? { singletonKey: opts.singletonKey } : {}),
        ...(opts.startAfterSeconds !== undefined ? { startAfter: opts.startAfterSeconds } : {})
      })
    },
    async sendMany (queue, payloads, opts) {
      if (payloads.length === 0) return
      const db = opts.db as Knex
      await boss.insert(queue, payloads.map(data => ({ data })), db.isTransaction ? { db: inTransaction(db as Knex.Transaction) } : {})
    }
  }
}
