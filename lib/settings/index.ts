import pg from 'pg'
import { engineOf, isClosed, type Db, type Statement } from '../db.js'
import type { Logger } from '../log.js'
import * as sql from './sql.js'

/**
 * Rarely changing per-tenant settings (an installed license, the permission policy), cached in
 * every process and invalidated across processes at once (README). A change runs
 * `changedStatement` in its own transaction: PostgreSQL delivers the NOTIFY at COMMIT, to every
 * process LISTENing on the same database, and never for a rolled-back change.
 */

/**
 * What a notification names: a tenant's license or policy, its layer definitions, the outbox (a
 * write committed domain events: lib/outbox `announceCommitted`), or jobs (jobs that are due were
 * committed to a queue: lib/queues `announceQueued`; the queue's name stands in the tenant's place).
 */
export const SETTINGS_KINDS = ['license', 'policy', 'layers', 'outbox', 'jobs'] as const
export type SettingsKind = typeof SETTINGS_KINDS[number]
const isKind = (k: string): k is SettingsKind => (SETTINGS_KINDS as readonly string[]).includes(k)

/** The NOTIFY a settings change runs in its transaction. */
export function changedStatement (kind: SettingsKind, tenantId: string): Statement {
  return sql.notifyStatement(`${kind}:${tenantId}`)
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

/**
 * Calls `listener` for every change this pool's feed hears of (a reconnect reports every kind with
 * tenant null). Returns the unsubscribe.
 */
export function onChange (db: Db, listener: Listener): () => void {
  const feed = feedOf(db)
  feed.listeners.add(listener)
  return () => { feed.listeners.delete(listener) }
}

function received (feed: Feed, payload: string | undefined): void {
  const [kind, ...rest] = (payload ?? '').split(':')
  if (isKind(kind)) emit(feed, kind, rest.join(':'))
}

/** LISTEN on a database that runs inside this process: resolves to its UNLISTEN. */
export type InProcessListen = (channel: string, onPayload: (payload: string) => void) => Promise<() => Promise<void>>

/**
 * Embedded mode (lib/embedded): the one process's own database delivers the notifications, so
 * the feed is live from the start and never reconnects.
 */
export async function startInProcessSettingsFeed (db: Db, listen: InProcessListen): Promise<{ stop: () => Promise<void> }> {
  const feed = feedOf(db)
  const unlisten = await listen(sql.CHANNEL, payload => { received(feed, payload) })
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
 * every second while the database cannot be reached. While it is not connected, caches trust
 * nothing (every read goes to the database); on (re)connect every cache is dropped, since
 * notifications sent meanwhile are lost.
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
      await sql.listen(c)
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'settings feed cannot listen yet; caches are bypassed until it does')
      c.removeAllListeners('end')
      await c.end().catch(() => {})
      later()
      return
    }
    if (stopped) { await c.end().catch(() => {}); return }
    client = c
    for (const kind of SETTINGS_KINDS) emit(feed, kind, null)
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
 * A per-tenant cache of one kind of setting, per pool; a tenant may hold several entries (`key`:
 * e.g. one per layer slug). Entries live until a change notification (or a feed reconnect) drops
 * the tenant's entries, or `maxAgeMs` passed; without a live feed every `get` loads afresh. A
 * load that raced with a notification of its tenant (or a reconnect) is not kept; other tenants'
 * notifications do not spoil it (on a busy database they arrive all the time).
 */
export class TenantSettingsCache<T> {
  private readonly perDb = new WeakMap<Db, CacheState<T>>()

  constructor (private readonly kind: SettingsKind, private readonly opts: { maxEntries?: number, maxAgeMs?: number } = {}) {}

  private stateOf (db: Db): CacheState<T> {
    let s = this.perDb.get(db)
    if (s === undefined) {
      const state: CacheState<T> = { tenants: new Map(), size: 0, clock: 0, changed: new Map(), resetAt: 0 }
      feedOf(db).listeners.add((kind, tenantId) => {
        if (kind !== this.kind) return
        if (tenantId === null) { state.resetAt = ++state.clock; state.tenants.clear(); state.size = 0 } else this.changed(state, tenantId)
      })
      this.perDb.set(db, state)
      s = state
    }
    return s
  }

  /** Marks the tenant changed now (loads in flight for it are not kept) and drops its entries. */
  private changed (s: CacheState<T>, tenantId: string): void {
    s.clock++
    // Marks matter only to loads in flight; past the bound, a reset stands in for them all.
    if (s.changed.size >= (this.opts.maxEntries ?? 10_000)) { s.changed.clear(); s.resetAt = s.clock }
    s.changed.set(tenantId, s.clock)
    drop(s, tenantId)
  }

  async get (db: Db, tenantId: string, load: () => Promise<T>, key = ''): Promise<T> {
    if (!feedOf(db).live) return load()
    const s = this.stateOf(db)
    const hit = s.tenants.get(tenantId)?.get(key)
    if (hit !== undefined && (this.opts.maxAgeMs === undefined || performance.now() - hit.at < this.opts.maxAgeMs)) return hit.value
    const started = s.clock
    const at = performance.now()
    const value = await load()
    if (s.resetAt <= started && (s.changed.get(tenantId) ?? 0) <= started && feedOf(db).live) {
      if (s.size >= (this.opts.maxEntries ?? 10_000)) { s.tenants.clear(); s.size = 0 }
      let entries = s.tenants.get(tenantId)
      if (entries === undefined) s.tenants.set(tenantId, entries = new Map())
      if (!entries.has(key)) s.size++
      entries.set(key, { value, at })
    }
    return value
  }

  /** Drops the tenant's entries in this process at once (its own notification follows shortly). */
  forget (db: Db, tenantId: string): void {
    this.changed(this.stateOf(db), tenantId)
  }
}

interface CacheState<T> {
  tenants: Map<string, Map<string, { value: T, at: number }>>
  size: number
  /** Counts notifications; `changed` holds each tenant's last, `resetAt` the last reconnect's. */
  clock: number
  changed: Map<string, number>
  resetAt: number
}

function drop (s: CacheState<unknown>, tenantId: string): void {
  s.size -= s.tenants.get(tenantId)?.size ?? 0
  s.tenants.delete(tenantId)
}

/**
 * Announces a change that was committed WITHOUT `changedStatement` in its transaction (writes
 * with domain events: a NOTIFY there would serialise every committing write of the database on
 * the notify queue lock, see lib/outbox). This process's listeners hear it at once; other
 * processes through a NOTIFY sent just after the commit from the pool, coalesced: an
 * announcement after a quiet spell goes at once, and while writes keep coming they go together
 * at most once per ANNOUNCE_INTERVAL_MS (the tenants changed meanwhile in one statement however
 * many writes). So a lone write reaches other processes within milliseconds, and a busy writer
 * costs the database one small transaction per interval instead of one per write. Its transaction
 * commits asynchronously (synchronous_commit off for it alone): a notification needs no
 * durability, and the writer's own commit is already durable. Failures are logged: the caches'
 * `maxAgeMs` bounds what a lost announcement costs.
 */
export function announce (db: Db, kind: SettingsKind, tenantId: string, log?: Logger): void {
  emit(feedOf(db), kind, tenantId)
  // Embedded mode: the data folder is locked to this process, whose feed is the only listener.
  if (engineOf(db).kind === 'pglite') return
  let a = announcers.get(db)
  if (a === undefined) announcers.set(db, a = { pending: new Set(), busy: false, lastAt: 0 })
  a.pending.add(`${kind}:${tenantId}`)
  if (!a.busy) void flush(db, a, log)
}

const ANNOUNCE_INTERVAL_MS = 100

interface Announcer { pending: Set<string>, busy: boolean, lastAt: number }
const announcers = new WeakMap<Db, Announcer>()

async function flush (db: Db, a: Announcer, log?: Logger): Promise<void> {
  a.busy = true
  while (a.pending.size > 0) {
    const wait = a.lastAt + ANNOUNCE_INTERVAL_MS - Date.now()
    if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait))
    // The pool closed while this waited (the process is stopping): dropped as a failed one would
    // be, without asking a closed pool (other processes' caches expire within their maxAgeMs).
    if (isClosed(db)) { a.pending.clear(); break }
    const payloads = [...a.pending]
    a.pending.clear()
    a.lastAt = Date.now()
    try {
      await sql.announce(db, payloads)
    } catch (err) {
      log?.warn({ err: { message: (err as Error).message } }, 'could not announce a change; other processes notice within their cache age')
    }
  }
  a.busy = false
}
