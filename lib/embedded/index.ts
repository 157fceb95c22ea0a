import path from 'node:path'
import { AsyncLocalStorage } from 'node:async_hooks'
import knexFactory, { type Knex } from 'knex'
import { PGlite } from '@electric-sql/pglite'
import { postgis } from '@electric-sql/pglite-postgis'
import { pgcrypto } from '@electric-sql/pglite/contrib/pgcrypto'
import { uuid_ossp } from '@electric-sql/pglite/contrib/uuid_ossp'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import { btree_gist } from '@electric-sql/pglite/contrib/btree_gist'
import ClientPgLite from 'knex-pglite'
import { instrumentDb, setEngine, type Db } from '../db.js'
import { probeMvt } from './sql.js'
import { lockDataDir } from './secret.js'

export { fromKnexPglite } from './boss.js'
export { DataDirLockedError, embeddedSecret, lockDataDir } from './secret.js'

/**
 * Embedded mode (no DATABASE_URL): the whole service in one process on PGlite, PostgreSQL
 * compiled to WebAssembly, with PostGIS, persisted under a data folder. For one machine and
 * trying things out; see README.
 */

export interface Embedded {
  db: Db
  pglite: PGlite
  dataDir: string
  /** Stops the database (closes PGlite through knex) and releases the data folder's lock. */
  close (): Promise<void>
}

interface KnexQuery { sql: string, bindings?: unknown[], response?: unknown }

/**
 * knex-pglite sends every statement as a prepared one, which holds one command only; our
 * migrations (like any knex.raw without bindings on node-postgres) may hold several. Statements
 * without bindings go through PGlite's simple protocol (exec), which takes any number.
 */
class EmbeddedClient extends (ClientPgLite as unknown as new (config: object) => { _query (conn: PGlite, obj: KnexQuery): Promise<KnexQuery> }) {
  override async _query (conn: PGlite, obj: KnexQuery): Promise<KnexQuery> {
    if ((obj.bindings?.length ?? 0) > 0) return super._query(conn, obj)
    const results = await conn.exec(obj.sql)
    const affectedRows = results.reduce((n, r) => n + (r.affectedRows ?? 0), 0)
    obj.response = { ...(results[results.length - 1] ?? { rows: [], fields: [] }), affectedRows }
    return obj
  }
}

/** Thrown at once where, on one connection, a statement would wait for its own transaction. */
export class OutsideTransactionError extends Error {}

/**
 * With one connection, a statement on the pool issued inside an open transaction's callback waits
 * for that transaction, which waits for it: a deadlock until acquireConnectionTimeout. (On
 * PostgreSQL the same code runs, silently outside the transaction.) This makes it fail at once,
 * naming the cause: the callback runs in an AsyncLocalStorage holding its transaction, and the
 * pool's acquire refuses while that transaction is open.
 */
function guardTransactions (db: Db): void {
  const open = new AsyncLocalStorage<Knex.Transaction>()
  const context = (db as unknown as { context: { transaction: (...args: unknown[]) => unknown } }).context
  const transaction = context.transaction.bind(context)
  context.transaction = (...args: unknown[]) => {
    const i = args.findIndex(a => typeof a === 'function')
    if (i < 0) return transaction(...args)
    const fn = args[i] as (trx: Knex.Transaction) => unknown
    const wrapped = [...args]
    wrapped[i] = (trx: Knex.Transaction) => open.run(trx, () => fn(trx))
    return transaction(...wrapped)
  }
  const client = db.client as { acquireConnection: () => Promise<unknown> }
  const acquire = client.acquireConnection.bind(client)
  client.acquireConnection = () => {
    const trx = open.getStore()
    if (trx !== undefined && !trx.isCompleted()) {
      return Promise.reject(new OutsideTransactionError('embedded mode: a statement on the pool inside an open transaction would wait for that transaction forever; run it on the transaction'))
    }
    return acquire()
  }
}

/**
 * Once the schema (PostGIS) is in place: does this build's ST_AsMVT work? PGlite's PostGIS is
 * compiled without protobuf; lib/layers then renders tiles in JavaScript (the same tiles).
 */
export async function probeEngine (db: Db): Promise<void> {
  setEngine(db, { kind: 'pglite', mvt: await probeMvt(db), cursors: false })
}

/**
 * Locks the data folder, opens (or creates) the database in `<dataDir>/pgdata` with the
 * extensions our migrations need, and gives knex its single connection.
 */
export async function openEmbedded (dataDir: string): Promise<Embedded> {
  const unlock = lockDataDir(dataDir)
  try {
    const pglite = await PGlite.create({
      dataDir: path.join(dataDir, 'pgdata'),
      extensions: { postgis, pgcrypto, uuid_ossp, pg_trgm, btree_gist }
    })
    const db = knexFactory({
      client: EmbeddedClient as unknown as typeof knexFactory.Client,
      dialect: 'postgres',
      connection: () => ({ pglite }) as object,
      // One connection: a statement outside an open transaction waits for it; a long wait is a bug
      // (something inside a transaction used the pool instead of the transaction).
      acquireConnectionTimeout: 30_000
    })
    instrumentDb(db)
    guardTransactions(db)
    setEngine(db, { kind: 'pglite', mvt: false, cursors: false })
    return {
      db, pglite, dataDir,
      async close () {
        try { await db.destroy() } finally { unlock() }
      }
    }
  } catch (err) {
    unlock()
    throw err
  }
}
