import type pg from 'pg'
import { prepared, type Db, type Statement } from '../db.js'

/** The channel every process LISTENs on for settings changes. */
export const CHANNEL = 'tenant_settings'

/** A NOTIFY for one change, run inside the change's own transaction (delivered at COMMIT). */
export function notifyStatement (payload: string): Statement {
  return { sql: 'SELECT pg_notify(?, ?)', bindings: [CHANNEL, payload] }
}

/** Subscribes a dedicated connection to the channel. */
export async function listen (c: pg.Client): Promise<void> {
  await c.query(`LISTEN ${CHANNEL}`)
}

/**
 * Announces several changes at once, outside any write (its own statement): the commit need not
 * wait for the WAL flush, since a lost announcement only leaves other caches to their age limit.
 */
export async function announce (db: Db, payloads: string[]): Promise<void> {
  await prepared(db, 'settings.announce', "SELECT set_config('synchronous_commit', 'off', true), pg_notify(?, p) FROM unnest(?::text[]) p", [CHANNEL, payloads])
}
