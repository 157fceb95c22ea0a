import net from 'node:net'
import pg from 'pg'
import { TEST_DATABASE_URL } from './env.js'

/** A TCP port free on 127.0.0.1 right now (for a child process to listen on). */
export async function freePort (): Promise<number> {
  const srv = net.createServer()
  await new Promise<void>(resolve => srv.listen(0, '127.0.0.1', resolve))
  const port = (srv.address() as net.AddressInfo).port
  await new Promise<void>(resolve => srv.close(() => resolve()))
  return port
}

/** One statement on the test server's `postgres` database (CREATE/DROP DATABASE). */
export async function adminQuery (sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: Object.assign(new URL(TEST_DATABASE_URL), { pathname: '/postgres' }).toString() })
  await c.connect()
  try { await c.query(sql) } finally { await c.end() }
}
