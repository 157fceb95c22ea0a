import pg from 'pg'
import type { Db, Statement } from '../db.js'
import type { Logger } from '../log.js'

/**
 * Rarely changing per-tenant settings (an installed license, the permission policy), cached in
 * every process and invalidated across processes at once (README). A change runs
 * `changedStatement` in its own transaction: PostgreSQL delivers the NOTIFY at COMMIT, to every
 * process LISTENing on the same database, and never for a rolled-back change.
 */

const CHANNEL = 'tenant_settings'

export type SettingsKind = 'license' | 'policy'

/** The NOTIFY a settings change runs in its transaction. */
export function changedStatement (kind: SettingsKind, tenantId: string): Statement {
  return { sql: 'SELECT pg_notify(?, ?)', bindings: [CHANNEL, `${kind}:${tenantId}`] }
}

type Listener = (kind: SettingsKind, tenantId: string | null) => void

interface Feed { live: boolean, listeners: Set<Listener> }

// One feed per pool: two apps in one process (tests) hold two pools and see each other only
// through PostgreSQL, exactly like two processes.
const feeds = new WeakMap<Db, Feed>()

function feedOf (db: Db): Feed {
  let f = feeds.get(db)
  if (f === undefined) { f = { live: false, listeners: new Set() }; feeds.set(db, f) }
  return f
}

function emit (feed: Feed, kind: SettingsKind, tenantId: string | null): void {
  for (const l of feed.listeners) l(kind, tenantId)
}

function received (feed: Feed, payload: string | undefined): void {
  const [kind, ...rest] = (payload ?? '').split(':')
  if (kind === 'license' || kind === 'policy') emit(feed, kind, rest.join(':'))
}

/** LISTEN on a database that runs inside this process: resolves to its UNLISTEN. */
export type InProcessListen = (channel: string, onPayload: (payload: string) => void) => Promise<() => Promise<void>>

/**
 * Embedded mode (lib/embedded): the one process's own database delivers the notifications, so
 * the feed is live from the start and never reconnects.
 */
export async function startInProcessSettingsFeed (db: Db, listen: InProcessListen): Promise<{ stop: () => Promise<void> }> {
  const feed = feedOf(db)
  const unlisten = await listen(CHANNEL, payload => { received(feed, payload) })
  feed.live = true
  return {
    async stop () {
      feed.live = false
      await unlisten()
    }
  }
}

/**
 * LISTENs on its own connection for as long as the process runs (API, worker, tests), retrying
 * every second while the database cannot be reached. While it is not connected, caches trust nothing (every read goes to the database); on (re)connect every
 * cache is dropped, since notifications sent meanwhile are lost.
 */
export async function startSettingsFeed (db: Db, databaseUrl: string, log: Logger): Promise<{ stop: () => Promise<void> }> {
  const feed = feedOf(db)
  let client: pg.Client | null = null
  let stopped = false
  let retry: NodeJS.Timeout | undefined
  const later = (): void => {
    if (!stopped) retry = setTimeout(() => { void connect() }, 1000)
  }
  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: databaseUrl })
    c.on('notification', msg => { received(feed, msg.payload) })
    c.on('error', err => { log.warn({ err: { message: err.message } }, 'settings feed lost its connection') })
    c.on('end', () => {
      feed.live = false
      later()
    })
    try {
      await c.connect()
      await c.query(`LISTEN ${CHANNEL}`)
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'settings feed cannot listen yet; caches are bypassed until it does')
      c.removeAllListeners('end')
      await c.end().catch(() => {})
      later()
      return
    }
    if (stopped) { await c.end().catch(() => {}); return }
    client = c
    emit(feed, 'license', null)
    emit(feed, 'policy', null)
    feed.live = true
  }
  await connect()
  return {
    async stop () {
      stopped = true
      clearTimeout(retry)
      feed.live = false
      await client?.end().catch(() => {})
    }
  }
}

/**
 * A per-tenant cache of one kind of setting, per pool. Entries live until a change notification
 * (or a feed reconnect) drops them; without a live feed every `get` loads afresh. A load that
 * raced with a notification is not kept (the generation moved on meanwhile).
 */
export class TenantSettingsCache<T> {
  private readonly perDb = new WeakMap<Db, { entries: Map<string, T>, generation: number }>()

  constructor (private readonly kind: SettingsKind, private readonly maxEntries = 10_000) {}

  private stateOf (db: Db): { entries: Map<string, T>, generation: number } {
    let s = this.perDb.get(db)
    if (s === undefined) {
      const state = { entries: new Map<string, T>(), generation: 0 }
      feedOf(db).listeners.add((kind, tenantId) => {
        if (kind !== this.kind) return
        state.generation++
        if (tenantId === null) state.entries.clear()
        else state.entries.delete(tenantId)
      })
      this.perDb.set(db, state)
      s = state
    }
    return s
  }

  async get (db: Db, tenantId: string, load: () => Promise<T>): Promise<T> {
    if (!feedOf(db).live) return load()
    const s = this.stateOf(db)
    const hit = s.entries.get(tenantId)
    if (hit !== undefined) return hit
    const generation = s.generation
    const value = await load()
    if (generation === s.generation && feedOf(db).live) {
      if (s.entries.size >= this.maxEntries) s.entries.clear()
      s.entries.set(tenantId, value)
    }
    return value
  }

  /** Drops the tenant's entry in this process at once (its own notification follows shortly). */
  forget (db: Db, tenantId: string): void {
    const s = this.stateOf(db)
    s.generation++
    s.entries.delete(tenantId)
  }
}
