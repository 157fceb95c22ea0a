import { fromKnex, type PgBoss } from 'pg-boss'
import type { Knex } from 'knex'
import { createHash } from 'node:crypto'
import { engineOf } from '../db.js'

// What this project relies on of the SQL text pg-boss generates (README here). Pinned: pg-boss
// 12.35.0; test/integration/fenced.test.ts fails when an upgrade changes any of it.

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

export function inTransaction (tx: Knex.Transaction): { executeSql: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> } {
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

export function guardedJob (text: string): { text: string, order: number[], name: string } {
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
export async function jobInsert (boss: PgBoss, queue: string, payload: object): Promise<{ text: string, values: unknown[] }> {
  let captured: { text: string, values: unknown[] } | null = null
  await boss.send(queue, payload, { db: { executeSql: async (text: string, values: unknown[] = []) => { captured = { text, values }; return { rows: [{ id: null }] } } } })
  if (captured === null) throw new Error(`pg-boss sent no statement for ${queue}`)
  return captured
}

