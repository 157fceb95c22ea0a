import { Readable } from 'node:stream'
import type { Db } from '../db.js'
import { AppError } from '../errors.js'
import type { Logger } from '../log.js'
import * as outbox from '../outbox/index.js'
import { encodeCursor } from './cursor.js'
import { readPage, type Start } from './feed.js'
import type { Selection } from './sql.js'

export interface HubOptions {
  /** Open streams per tenant in this process; one more is 429. */
  maxStreamsPerTenant: number
  heartbeatMs: number
  /** Bytes a stream may hold unsent; beyond, it is dropped with its position. */
  bufferBytes: number
}

interface Stream { out: Readable, after: number, group: Group }
/** The streams of a tenant that follow the same selection: one read serves them all. */
interface Group { key: string, selection: Selection, streams: Set<Stream> }
interface Tenant { id: string, groups: Map<string, Group>, count: number, running: boolean, again: boolean }

/** setTimeout's longest delay; a token living longer ends its stream then (the client resumes). */
const MAX_TIMER_MS = 2 ** 31 - 1

/** Changes per read of a group. */
const PAGE = 1000

const frame = (cursor: string, change: string): string => `id: ${cursor}\nevent: change\ndata: ${change}\n\n`

/**
 * The live change streams of one API process (README "Live streams"). One subscription to the
 * process's notification feed (lib/outbox `onCommitted`: a write committed in this process or,
 * through PostgreSQL's NOTIFY, in another) wakes the tenant's readers; each group of streams
 * with the same selection is served by one read per wake-up, from the lowest position among
 * them, and each stream takes what lies after its own. At most one read per tenant is in flight;
 * a wake-up meanwhile causes one more after it. The heartbeat also wakes every tenant with
 * streams, which bounds what a lost notification costs.
 */
export class ChangeHub {
  private readonly tenants = new Map<string, Tenant>()
  private readonly unsubscribe: () => void
  private readonly timer: NodeJS.Timeout

  constructor (private readonly db: Db, private readonly opts: HubOptions, private readonly log: Logger) {
    this.unsubscribe = outbox.onCommitted(db, tenantId => {
      if (tenantId !== null) this.wake(tenantId)
      else for (const t of this.tenants.keys()) this.wake(t)
    })
    this.timer = setInterval(() => { this.beat() }, opts.heartbeatMs)
    this.timer.unref()
  }

  /**
   * A new stream of the tenant from `start`: SSE text, ended when the hub stops or drops it, or
   * at `untilMs` (the token's expiry: a stream outliving its token would read on without one).
   */
  open (tenantId: string, start: Start, untilMs = Infinity): Readable {
    let t = this.tenants.get(tenantId)
    if (t === undefined) this.tenants.set(tenantId, t = { id: tenantId, groups: new Map(), count: 0, running: false, again: false })
    if (t.count >= this.opts.maxStreamsPerTenant) {
      throw new AppError('RATE_LIMITED', `this tenant has ${t.count} change streams open on this server, the most it may (CHANGES_MAX_STREAMS_PER_TENANT); close one, or page GET /v1/changes`, {
        retryAfterSeconds: 1, reason: 'open change streams', maxStreams: this.opts.maxStreamsPerTenant
      })
    }
    const key = JSON.stringify([start.selection.where?.text ?? null, start.selection.where?.params ?? [], start.selection.withObject])
    let g = t.groups.get(key)
    if (g === undefined) t.groups.set(key, g = { key, selection: start.selection, streams: new Set() })
    const stream: Stream = { out: new Readable({ read () {} }), after: start.after, group: g }
    g.streams.add(stream)
    t.count++
    const expiry = Number.isFinite(untilMs) ? setTimeout(() => { this.drop(t, stream, 'token expired: resume with a new token') }, Math.min(Math.max(0, untilMs - Date.now()), MAX_TIMER_MS)) : null
    expiry?.unref()
    stream.out.once('close', () => { if (expiry !== null) clearTimeout(expiry); this.detach(t, stream) })
    // The first bytes go out at once, so the client has the headers before any change.
    stream.out.push(': stream open\n\n')
    this.wake(tenantId)
    return stream.out
  }

  private detach (t: Tenant, s: Stream): void {
    if (!s.group.streams.delete(s)) return
    t.count--
    if (s.group.streams.size === 0) t.groups.delete(s.group.key)
    if (t.count === 0 && !t.running) this.tenants.delete(t.id)
  }

  private wake (tenantId: string): void {
    const t = this.tenants.get(tenantId)
    if (t === undefined) return
    if (t.running) { t.again = true; return }
    t.running = true
    void (async () => {
      try {
        do {
          t.again = false
          for (const g of [...t.groups.values()]) await this.catchUp(t, g)
        } while (t.again && t.count > 0)
      } catch (err) {
        // The next notification or heartbeat reads again from the streams' positions.
        this.log.warn({ err: { message: (err as Error).message }, tenant: t.id }, 'change streams could not read the feed')
      } finally {
        t.running = false
        if (t.count === 0) this.tenants.delete(t.id)
        else if (t.again) this.wake(t.id)
      }
    })()
  }

  /** Reads the group's changes from its lowest position until every stream of it is at the end. */
  private async catchUp (t: Tenant, g: Group): Promise<void> {
    while (g.streams.size > 0) {
      const after = Math.min(...[...g.streams].map(s => s.after))
      const page = await readPage(this.db, t.id, g.selection, after, PAGE)
      const frames = page.rows.map(r => ({ sequence: r.sequence, text: frame(r.cursor, r.change) }))
      const all = frames.map(f => f.text).join('')
      for (const s of g.streams) {
        if (s.after < after) continue // joined during the read: the next turn starts from it
        const text = s.after === after ? all : frames.filter(f => f.sequence > s.after).map(f => f.text).join('')
        s.after = Math.max(s.after, page.next)
        if (text !== '') this.send(t, s, text)
      }
      if (!page.hasMore && ![...g.streams].some(s => s.after < page.next)) return
    }
  }

  /** Queues `text` on the stream; a stream holding more unsent than the bound is dropped. */
  private send (t: Tenant, s: Stream, text: string): void {
    s.out.push(text)
    if (s.out.readableLength > this.opts.bufferBytes) this.drop(t, s, 'slow consumer: more unsent than CHANGES_STREAM_BUFFER_BYTES')
  }

  /** Ends a stream with its position: what it was sent is ahead of this in the same buffer. */
  private drop (t: Tenant, s: Stream, reason: string): void {
    if (!s.group.streams.has(s)) return // already ended
    s.out.push(`event: dropped\ndata: ${JSON.stringify({ reason, cursor: encodeCursor(t.id, s.after) })}\n\n`)
    s.out.push(null)
    this.detach(t, s)
    // A client that reads nothing more is cut after a heartbeat interval.
    setTimeout(() => { s.out.destroy() }, this.opts.heartbeatMs).unref()
  }

  private beat (): void {
    for (const t of this.tenants.values()) {
      for (const g of t.groups.values()) {
        for (const s of g.streams) this.send(t, s, ': heartbeat\n\n')
      }
      this.wake(t.id)
    }
  }

  /** Open streams: per tenant, or in all. */
  streams (tenantId?: string): number {
    if (tenantId !== undefined) return this.tenants.get(tenantId)?.count ?? 0
    let n = 0
    for (const t of this.tenants.values()) n += t.count
    return n
  }

  /** Ends every stream (clients resume with their Last-Event-ID) and stops listening. */
  stop (): void {
    this.unsubscribe()
    clearInterval(this.timer)
    for (const t of [...this.tenants.values()]) {
      for (const g of [...t.groups.values()]) for (const s of [...g.streams]) { s.out.push(null); this.detach(t, s) }
    }
  }
}
