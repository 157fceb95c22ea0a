import { connect, type Socket } from 'node:net'

// A keep-alive HTTP/1.1 client for the load generator, as lean as pg's driver is for the raw side:
// one request in flight per socket, the request written in one call, the answer read by its
// Content-Length (or chunked framing) into one string. No agent, no header objects, no streams.
// It exists so that the HTTP sides of a comparison are not charged a heavier client than the SQL
// side's (node:http's client costs several times pg's per call; bench/README.md).

interface Pending {
  resolve: (r: { status: number, body: Buffer }) => void
  reject: (e: Error) => void
}

class Conn {
  readonly socket: Socket
  // What has arrived and is not yet taken: pieces, joined only when needed (a 100 KB tile comes in
  // many pieces; joining on every piece would copy it over and over).
  private pieces: Buffer[] = []
  private length = 0
  /** The answer being read, once its head is: its status, and how its body is framed. */
  private answer: { status: number, close: boolean, need: number, chunked: boolean, body: Buffer[], chunkLeft: number } | null = null
  private pending: Pending | null = null
  private gone = false
  /** Answers read on this connection: a request on a reused one may meet the server's idle close. */
  served = 0

  constructor (host: string, port: number, private readonly onFree: (c: Conn) => void, private readonly onClose: (c: Conn) => void) {
    this.socket = connect({ host, port, noDelay: true })
    this.socket.on('data', d => {
      this.pieces.push(d)
      this.length += d.length
      const a = this.answer
      if (a === null || a.chunked || this.length >= a.need) this.read()
    })
    const fail = (err: Error) => {
      this.leave()
      const p = this.pending
      this.pending = null
      p?.reject(err)
    }
    this.socket.on('error', fail)
    this.socket.on('close', () => fail(new Error('connection closed')))
  }

  send (head: string, body: Buffer | undefined, p: Pending): void {
    this.pending = p
    if (body === undefined) this.socket.write(head)
    else { this.socket.cork(); this.socket.write(head); this.socket.write(body); this.socket.uncork() }
  }

  /** Off the pool, once. */
  private leave (): void {
    if (this.gone) return
    this.gone = true
    this.onClose(this)
  }

  private joined (): Buffer {
    if (this.pieces.length > 1) this.pieces = [Buffer.concat(this.pieces, this.length)]
    return this.pieces[0] ?? Buffer.alloc(0)
  }

  /** Takes `n` bytes off what has arrived. */
  private take (n: number): Buffer {
    const buf = this.joined()
    const out = buf.subarray(0, n)
    const rest = buf.subarray(n)
    this.pieces = rest.length > 0 ? [rest] : []
    this.length = rest.length
    return out
  }

  private read (): void {
    if (this.answer === null) {
      const buf = this.joined()
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) return
      const head = this.take(end + 4).toString('latin1').toLowerCase()
      const cl = /\r\ncontent-length: *(\d+)/.exec(head)
      this.answer = {
        status: Number(head.slice(9, 12)),
        close: /\r\nconnection: *close/.test(head),
        // No framing at all (204, 304): the head is the whole answer.
        need: cl !== null ? Number(cl[1]) : 0,
        chunked: cl === null && head.includes('\r\ntransfer-encoding: chunked'),
        body: [],
        chunkLeft: -1
      }
    }
    const a = this.answer
    if (!a.chunked) {
      if (this.length < a.need) return
      a.body.push(this.take(a.need))
    } else {
      // Chunks as they come: a size line, its bytes and CRLF; a zero size, then CRLF, ends the body
      // (-2: the zero size is read).
      while (a.chunkLeft !== -2) {
        if (a.chunkLeft < 0) {
          const buf = this.joined()
          const eol = buf.indexOf('\r\n')
          if (eol < 0) return
          a.chunkLeft = parseInt(buf.toString('latin1', 0, eol), 16)
          this.take(eol + 2)
          if (a.chunkLeft === 0) { a.chunkLeft = -2; continue }
        }
        if (this.length < a.chunkLeft + 2) return
        a.body.push(this.take(a.chunkLeft))
        this.take(2)
        a.chunkLeft = -1
      }
      if (this.length < 2) return
      this.take(2)
    }
    this.answer = null
    const p = this.pending
    this.pending = null
    this.served++
    if (a.close) { this.leave(); this.socket.destroy() } else this.onFree(this)
    p?.resolve({ status: a.status, body: a.body.length === 1 ? a.body[0] : Buffer.concat(a.body) })
  }
}

/** A pool of keep-alive connections to one origin; `request` resolves with the status and body. */
export class LeanClient {
  private readonly host: string
  private readonly port: number
  private readonly hostHeader: string
  private readonly free: Conn[] = []
  private readonly waiting: Array<() => void> = []
  private open = 0

  constructor (baseUrl: string, private readonly max = 32) {
    const u = new URL(baseUrl)
    this.host = u.hostname
    this.port = Number(u.port || 80)
    this.hostHeader = u.host
  }

  /** A free connection, a new one under `max`, or the next one released. */
  private connection (): Promise<Conn> {
    const c = this.free.pop()
    if (c !== undefined) return Promise.resolve(c)
    if (this.open < this.max) {
      this.open++
      return Promise.resolve(new Conn(this.host, this.port, conn => this.release(conn), conn => this.drop(conn)))
    }
    return new Promise(resolve => this.waiting.push(() => { void this.connection().then(resolve) }))
  }

  private release (c: Conn): void {
    this.free.push(c)
    this.waiting.shift()?.()
  }

  private drop (c: Conn): void {
    const i = this.free.indexOf(c)
    if (i >= 0) this.free.splice(i, 1)
    this.open--
    this.waiting.shift()?.()
  }

  async request (method: string, path: string, headers: string, body?: Buffer): Promise<{ status: number, body: Buffer }> {
    const head = `${method} ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\n${headers}${body !== undefined ? `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` : ''}\r\n`
    for (;;) {
      const conn = await this.connection()
      try {
        return await new Promise((resolve, reject) => conn.send(head, body, { resolve, reject }))
      } catch (err) {
        // A kept-alive connection the server closed while it was idle: send again on another. A
        // new connection that fails is the answer (a write is not sent twice for it).
        if (conn.served === 0) throw err
      }
    }
  }

  close (): void {
    for (const c of this.free) c.socket.destroy()
    this.free.length = 0
  }
}
