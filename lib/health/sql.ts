import type { Db } from '../db.js'

/** The cheapest statement that proves the database answers. */
export async function ping (db: Db): Promise<void> {
  await db.raw('SELECT 1')
}
