import { afterCommit, type Db, type Queryable } from '../db.js'
import type { Logger } from '../log.js'
import * as settings from '../settings/index.js'

// Workers look for work when told: a process that sends due jobs announces the queue once they are
// committed, through the notification feed every process listens on (lib/settings `announce`:
// this process's listeners at once, the others by a NOTIFY sent after the commit, coalesced). A
// worker wakes its loops for that queue, so a run queued by the API starts within milliseconds,
// and its polls are only a backstop (for announcements lost with a process or a feed reconnect).

/**
 * After `db`'s jobs for `queue` commit (at once when `db` is a pool, after the COMMIT of a
 * transaction lib/db `withTransaction` opened, never on rollback), wakes every worker's loops for
 * it. A transaction opened elsewhere announces nothing: the workers' polls find its jobs.
 */
export function announceQueued (db: Queryable, queue: string, log?: Logger): void {
  afterCommit(db, pool => { settings.announce(pool, 'jobs', queue, log) })
}

/** Calls `listener` with the queue that got jobs, or null after a feed reconnect (any may have). */
export function onQueued (db: Db, listener: (queue: string | null) => void): () => void {
  return settings.onChange(db, (kind, queue) => { if (kind === 'jobs') listener(queue) })
}
