// A Server-Sent Events client over fetch() streaming (as a browser reads the change feed, with
// its Authorization header): events parsed as they arrive, waited on by condition.

export interface SseEvent { id?: string, event?: string, data?: string, comment?: string }

export interface SseStream {
  status: number
  headers: Headers
  /** Every event and comment so far, in order. */
  events: SseEvent[]
  /** Resolves once `pred` holds for the events so far (checked as each arrives); rejects after `ms`. */
  until: (what: string, pred: (events: SseEvent[]) => boolean, ms?: number) => Promise<SseEvent[]>
  /** Resolves when the server ends the stream. */
  ended: Promise<void>
  close: () => void
}

function parse (block: string): SseEvent {
  const e: SseEvent = {}
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) { e.comment = line.slice(1).trim(); continue }
    const i = line.indexOf(':')
    const field = i === -1 ? line : line.slice(0, i)
    const value = i === -1 ? '' : line.slice(i + 1).replace(/^ /, '')
    if (field === 'id' || field === 'event') e[field] = value
    else if (field === 'data') e.data = e.data === undefined ? value : `${e.data}\n${value}`
  }
  return e
}

export async function openSse (url: string, headers: Record<string, string>): Promise<SseStream> {
  const ac = new AbortController()
  const res = await fetch(url, { headers: { Accept: 'text/event-stream', ...headers }, signal: ac.signal })
  const events: SseEvent[] = []
  const waiters = new Set<() => void>()
  const notify = () => { for (const w of [...waiters]) w() }
  const ended = (async () => {
    if (res.body === null) return
    const reader = res.body.getReader()
    const decoder = new TextDecoder()
    let buf = ''
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buf += decoder.decode(value, { stream: true })
        let end
        while ((end = buf.indexOf('\n\n')) !== -1) {
          events.push(parse(buf.slice(0, end)))
          buf = buf.slice(end + 2)
        }
        notify()
      }
    } catch { /* aborted */ }
    notify()
  })()
  let done = false
  void ended.then(() => { done = true; notify() })
  const until = (what: string, pred: (e: SseEvent[]) => boolean, ms = 10_000) => new Promise<SseEvent[]>((resolve, reject) => {
    const check = () => {
      if (pred(events)) { cleanup(); resolve(events) } else if (done) { cleanup(); reject(new Error(`stream ended before ${what}: ${JSON.stringify(events)}`)) }
    }
    const timer = setTimeout(() => { cleanup(); reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(events)}`)) }, ms)
    const cleanup = () => { clearTimeout(timer); waiters.delete(check) }
    waiters.add(check)
    check()
  })
  return { status: res.status, headers: res.headers, events, until, ended, close: () => ac.abort() }
}

/** The change events' data, parsed. */
export const changesOf = (events: SseEvent[]): any[] => events.filter(e => e.event === 'change').map(e => JSON.parse(e.data!))
