import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable, Transform, pipeline } from 'node:stream'
import type { Logger } from '../../lib/log.js'
import { errorAnswer } from '../middleware/errors.js'
import { requestIdOf, requestState, type RequestRecorder } from '../middleware/observe.js'
import { JSON_TYPE, RouteRequest, type Answer, type RequestState, type Route } from './route.js'

/** A declared route with its guards in order (server/http/guards.ts). */
export interface CompiledRoute extends Route {
  guards: Array<(req: RouteRequest) => Promise<void> | void>
}

export interface ExchangeDeps {
  log: Logger
  recorder: RequestRecorder
}

/**
 * One request to one route, whichever way it came in (Koa's router or the edge): its state (id,
 * lazy logger), the route's guards in order, the handler, the answer (or the error's answer)
 * written by `send`, then the request's metrics and log line.
 */
export async function exchange (deps: ExchangeDeps, route: CompiledRoute, raw: IncomingMessage, res: ServerResponse, path: string, search: string, params: Record<string, string>): Promise<void> {
  const started = performance.now()
  const state = requestState(deps.log, requestIdOf(raw.headers['x-request-id']))
  state.route = route.spec.path
  const req = new RouteRequest(raw, path, search, params, state)
  let answer: Answer
  try {
    for (const guard of route.guards) {
      const pending = guard(req)
      if (pending !== undefined) await pending
    }
    answer = await route.handle(req)
  } catch (err) {
    answer = errorAnswer(err, state)
  }
  let status: number
  try {
    status = send(res, req.method, answer, state, req.answerHeaders)
  } catch (err) {
    state.release?.()
    throw err
  }
  deps.recorder.finish(state, req.method, route.spec.path, path, status, started)
}

const NO_BODY = new Set([204, 304])

/**
 * Writes an answer: `body` as JSON, or `bytes` as they are (a string, a Buffer, Buffer pieces in
 * one writev, or a stream piped until it ends; a stream that fails cuts the connection, so a
 * client never takes a truncated body for a whole one). HEAD gets the headers only. Every answer
 * carries X-Request-Id and the headers the guards set (`extra`: the rate limit's). Once the answer
 * is written (a stream: ended, failed or cut), `state.release` gives back what the guards held.
 * With `state.pace` (the heavy lane's, tenant-gate.ts), a stream goes out through `paced`, and an
 * answer already made at once; either way its slot is held until the pace has let its bytes go.
 * Returns the status.
 */
export function send (res: ServerResponse, method: string, a: Answer, state: RequestState, extra?: Record<string, string>): number {
  const status = a.status ?? 200
  const headers: Record<string, string | number> = Object.assign({ 'X-Request-Id': state.requestId }, extra, a.headers)
  const payload = a.bytes !== undefined ? a.bytes : a.body === undefined ? undefined : JSON.stringify(a.body)
  if (payload === undefined || NO_BODY.has(status)) {
    if (payload instanceof Readable) payload.destroy()
    res.writeHead(status, headers).end()
    state.release?.()
    return status
  }
  headers['Content-Type'] = a.type ?? (a.bytes === undefined ? JSON_TYPE : 'application/octet-stream')
  if (payload instanceof Readable) {
    res.writeHead(status, headers)
    if (method === 'HEAD') { payload.destroy(); res.end(); state.release?.(); return status }
    // state.log is read only here: reading it makes the request's child logger.
    const done = (err: Error | null): void => {
      state.release?.()
      if (err !== undefined && err !== null && !res.destroyed) state.log.warn({ err }, 'answer stream failed')
    }
    if (state.pace === undefined) pipeline(payload, res, done)
    else pipeline(payload, paced(state.pace), res, done)
    return status
  }
  const pieces = typeof payload === 'string' || Buffer.isBuffer(payload) ? null : payload
  const length = pieces === null ? Buffer.byteLength(payload as string | Buffer) : pieces.reduce((n, p) => n + p.length, 0)
  headers['Content-Length'] = length
  res.writeHead(status, headers)
  if (method === 'HEAD') res.end()
  else if (pieces === null) res.end(payload)
  else {
    res.cork()
    for (const p of pieces) res.write(p)
    res.end()
    res.uncork()
  }
  // A paced answer already made (a page, a tile) goes out at once; what it owes is paid by holding
  // its slot for that long, so the tenant's next heavy request waits instead.
  const owed = method === 'HEAD' || state.pace === undefined ? 0 : state.pace(length)
  if (owed < 1) state.release?.()
  else setTimeout(() => { state.release?.() }, owed)
  return status
}

// A paced answer goes out in pieces of this size, each followed by its share of the second.
const PACED_PIECE = 64 * 1024

/**
 * Passes bytes on as `charge` allows: in pieces of at most 64 KiB, each sent at once and charged,
 * and the next (or the end, which gives back the answer's slot) once the wait `charge` names has
 * passed. Backpressure carries the wait to the producer (a COPY's backend waits on its socket).
 */
export function paced (charge: (bytes: number) => number): Transform {
  return new Transform({
    transform (chunk: Buffer, _enc, next) {
      let at = 0
      const step = (): void => {
        while (at < chunk.length) {
          const piece = chunk.subarray(at, at + PACED_PIECE)
          at += piece.length
          this.push(piece)
          const wait = charge(piece.length)
          if (wait >= 1) { setTimeout(step, wait); return }
        }
        next()
      }
      step()
    }
  })
}
