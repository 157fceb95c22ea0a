import { randomUUID } from 'node:crypto'
import type { Logger } from '../../lib/log.js'
import { httpRequestDuration, httpRequestsTotal } from '../../lib/metrics.js'
import type { RequestState } from '../http/route.js'

// A request's id, its one log line and the HTTP metrics. Every request pays for this, so it
// builds nothing it may not need: the request's child logger is made on first use
// (`state.log`), the log line only when its level is enabled, and one label object per
// (method, route, status) is kept for the metrics.

const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/

type Labels = { method: string, route: string, status: string }

/** The client's X-Request-Id when it is safe to echo, else a new one. */
export function requestIdOf (sent: string | string[] | undefined): string {
  return typeof sent === 'string' && SAFE_REQUEST_ID.test(sent) ? sent : randomUUID()
}

export interface RequestRecorder {
  /** The HTTP metrics and the request's log line, once it is answered. */
  finish (state: RequestState, method: string, route: string, path: string, status: number, started: number): void
}

/** What is recorded per request, once it is answered (server/http/exchange.ts). */
export function requestRecorder (log: Logger): RequestRecorder {
  const labelSets = new Map<string, Labels>()
  const labelsOf = (method: string, route: string, status: number): Labels => {
    const key = `${method} ${status} ${route}`
    let l = labelSets.get(key)
    if (l === undefined) {
      l = { method, route, status: String(status) }
      // Bounded: the route is a template (or 'unmatched'), the method and status are few.
      if (labelSets.size >= 10_000) labelSets.clear()
      labelSets.set(key, l)
    }
    return l
  }
  return {
    finish (state, method, route, path, status, started) {
      const seconds = (performance.now() - started) / 1000
      const labels = labelsOf(method, route, status)
      httpRequestsTotal.inc(labels)
      httpRequestDuration.observe(labels, seconds)
      if (log.info()) state.log.info({ method, route, path, status, ms: Math.round(seconds * 1e4) / 10 }, 'request')
    }
  }
}

// The accessor of `state.log`, one pair shared by every request: per-request getter and setter
// functions would give each state object a map of its own in V8 (slower to make and to read).
const LOG_ROOT = Symbol('log root')
const LOG_CHILD = Symbol('log child')
interface LogState { requestId?: unknown, [LOG_ROOT]: Logger, [LOG_CHILD]?: Logger }
const LOG_ACCESSOR: PropertyDescriptor = {
  configurable: true,
  enumerable: true,
  get (this: LogState) { return (this[LOG_CHILD] ??= this[LOG_ROOT].child({ requestId: this.requestId }, true)) },
  set (this: LogState, v: Logger) { this[LOG_CHILD] = v }
}

/** A request's state: `requestId`, and `log`, its child logger (with that id), made when first read. */
export function requestState (log: Logger, requestId: string): RequestState {
  const state = { requestId, [LOG_ROOT]: log } as unknown as RequestState
  Object.defineProperty(state, 'log', LOG_ACCESSOR)
  return state
}
