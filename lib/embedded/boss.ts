import type { Knex } from 'knex'
import type { PGlite, Results } from '@electric-sql/pglite'

/**
 * pg-boss's database adapter in embedded mode (shared/embedded.md, design a): every pg-boss
 * statement borrows knex's one PGlite connection. So pg-boss waits in knex's pool queue while an
 * application transaction holds that connection (it never reads or writes inside someone else's
 * transaction), and a job sent with `fromKnex(trx)` commits or rolls back with its transaction.
 */

interface Adapter {
  executeSql (text: string, values?: unknown[]): Promise<{ rows: any[] }>
  beginTransaction (): Promise<{ db: Adapter, commit (): Promise<void>, rollback (): Promise<void> }>
}

interface PgliteClient {
  acquireConnection (): Promise<PGlite>
  releaseConnection (conn: PGlite): Promise<void>
}

export function fromKnexPglite (k: Knex | Knex.Transaction): Adapter {
  const client = k.client as PgliteClient
  const trx = k.isTransaction ? k as Knex.Transaction : null
  const adapter: Adapter = {
    async executeSql (text, values) {
      if (trx?.isCompleted()) throw new Error('the knex transaction has already ended')
      // Inside a transaction, knex's transaction client hands out the transaction's connection.
      const conn = await client.acquireConnection()
      try {
        if (values !== undefined && values.length > 0) return await conn.query(text, values)
        // pg-boss's parameterless statements may be several (BEGIN; ...; COMMIT;): exec runs them all.
        const res: Results[] = await conn.exec(text)
        return { rows: res.flatMap(r => r.rows ?? []) }
      } catch (err) {
        // Never leave the one session inside a failed block of pg-boss's own.
        if (trx === null && conn.isInTransaction()) await conn.query('ROLLBACK').catch(() => {})
        throw err
      } finally {
        await client.releaseConnection(conn)
      }
    },
    async beginTransaction () {
      const t = await (k as Knex).transaction()
      return {
        db: fromKnexPglite(t),
        async commit () { await t.commit(); await t.executionPromise },
        async rollback () { if (!t.isCompleted()) await t.rollback().catch(() => {}) }
      }
    }
  }
  return adapter
}
