import net from 'node:net'
import type { Server, ServerResponse } from 'node:http'
import type { Logger } from '../../lib/log.js'

export interface Drain {
  /** True once drain() began: readiness answers 503 then, so balancers take the process out. */
  readonly draining: boolean
  /** Stops taking connections and waits for the answers in progress, at most `timeoutMs`. */
  drain (timeoutMs: number): Promise<void>
}

/**
 * The API's graceful stop (docs/operations.md "Rolling restart"). Once draining, every answer not
 * yet started carries `Connection: close`, so a client's keep-alive connection ends with the answer
 * it is waiting for and its next request opens a connection elsewhere. Idle keep-alive connections
 * are not closed at once: a client may be sending its next request on one at that very moment, and
 * would see the connection reset with no answer. They end by the server's keep-alive timeout, which
 * the client was told (`Keep-Alive: timeout=5`) and gives up on first.
 */
export function drainable (server: Server, log: Logger): Drain {
  let draining = false
  const inProgress = new Set<ServerResponse>()
  // Prepended: it runs before the app's handler could start an answer.
  server.prependListener('request', (_req, res: ServerResponse) => {
    if (draining) res.setHeader('Connection', 'close')
    inProgress.add(res)
    res.once('close', () => inProgress.delete(res))
  })
  return {
    get draining () { return draining },
    drain (timeoutMs) {
      draining = true
      for (const res of inProgress) if (!res.headersSent) res.setHeader('Connection', 'close')
      return new Promise(resolve => {
        const timer = setTimeout(() => {
          log.warn({ requests: inProgress.size, timeoutMs }, 'shutdown timeout: cutting the requests still in progress')
          server.closeAllConnections()
          resolve()
        }, timeoutMs)
        // net.Server's close (stop accepting; call back once every connection has ended), not
        // http.Server's, which would also close the idle keep-alive connections at once.
        net.Server.prototype.close.call(server, () => { clearTimeout(timer); resolve() })
      })
    }
  }
}
