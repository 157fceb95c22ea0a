import pg from 'pg'
import pgUtils from 'pg/lib/utils.js'

// What this project uses of pg's internals (README here). Pinned: pg 8.23.1;
// test/integration/fenced.test.ts fails when an upgrade changes any of it.

// A named prepared statement whose one row has one bytea column, read as raw bytes (a rendered
// vector tile). pg reads every value as text: a bytea would arrive hex-encoded (twice its size),
// become a string as large on the V8 heap (large strings set off full collections of the whole
// heap) and be parsed back from hex. Asked with the binary result format, PostgreSQL sends the
// bytes as they are, and this query hands them on as they arrived: views of the socket's chunks,
// in order, none copied (the response writes them in one writev; a copy into one buffer would
// double the fresh memory per tile, which is what sets those collections off). Everything else of
// the exchange (ParseComplete, errors, CommandComplete, ReadyForQuery) passes to pg's own
// parser, so the client's state (prepared statements, transaction status, the query queue) is
// kept by pg as for any query. The statement is planned once per connection like any named one
// (pg's parsedStatements); no Describe is sent, no RowDescription parsed.

const D = 0x44 // DataRow
const Z = 0x5a // ReadyForQuery

type DataListener = (chunk: Buffer) => void
interface PgConnection {
  stream: NodeJS.ReadableStream & { cork?: () => void, uncork?: () => void }
  parsedStatements: Record<string, string>
  submittedNamedStatements: Record<string, string>
  parse (q: { name: string, text: string, types?: unknown[] }): void
  bind (c: { statement: string, values: unknown[], binary: boolean, valueMapper: (v: unknown) => unknown }): void
  execute (c: { portal: string, rows: number }): void
  sync (): void
  sendCopyFail (msg: string): void
}

class BytesQuery {
  callback?: (err: Error | null, value?: Buffer[]) => void
  private pgData: DataListener | null = null
  private stream: PgConnection['stream'] | null = null
  private rest: Buffer | null = null
  private pending = 0 // bytes of the value still to come in later chunks
  private skip = 0 // bytes of a DataRow of another shape still to discard
  private readonly parts: Buffer[] = []
  private row = false // the first row was read
  private error: Error | null = null
  private done = false

  // `name` and `text`: pg's client records them in parsedStatements on ParseComplete.
  constructor (readonly name: string, readonly text: string, private readonly values: unknown[]) {}

  submit (connection: PgConnection): Error | null {
    const previous = connection.parsedStatements[this.name] ?? connection.submittedNamedStatements[this.name]
    if (previous !== undefined && previous !== this.text) return new Error(`prepared statement ${this.name} was used for a different statement`)
    this.attach(connection.stream)
    connection.stream.cork?.()
    try {
      if (previous === undefined) {
        connection.parse({ name: this.name, text: this.text })
        connection.submittedNamedStatements[this.name] = this.text
      }
      connection.bind({ statement: this.name, values: this.values, binary: true, valueMapper: pgUtils.prepareValue })
      connection.execute({ portal: '', rows: 0 })
      connection.sync()
    } finally {
      connection.stream.uncork?.()
    }
    return null
  }

  /** Takes the socket's data from pg's protocol parser (pg-copy-streams does the same for COPY). */
  private attach (stream: PgConnection['stream']): void {
    const listeners = stream.listeners('data') as DataListener[]
    if (listeners.length !== 1) throw new Error('pg connection: expected one data listener')
    this.pgData = listeners[0]
    this.stream = stream
    stream.removeListener('data', this.pgData)
    stream.on('data', this.onData)
  }

  private detach (): void {
    if (this.stream === null || this.pgData === null) return
    this.stream.removeListener('data', this.onData)
    this.stream.on('data', this.pgData)
    this.stream = null
  }

  /** DataRow messages are read here; every other message is handed to pg's parser, whole or not. */
  private readonly onData = (input: Buffer): void => {
    let chunk = input
    if (this.rest !== null) { chunk = Buffer.concat([this.rest, input]); this.rest = null }
    let off = 0
    let passFrom = -1 // start of a run of messages for pg's parser
    const pass = (end: number): void => {
      if (passFrom >= 0 && end > passFrom) this.pgData!(chunk.subarray(passFrom, end))
      passFrom = -1
    }
    while (off < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - off)
        this.skip -= n
        off += n
        continue
      }
      if (this.pending > 0) {
        const n = Math.min(this.pending, chunk.length - off)
        this.parts.push(chunk.subarray(off, off + n))
        this.pending -= n
        off += n
        continue
      }
      if (chunk.length - off < 5) break
      const code = chunk[off]
      if (code === D) {
        pass(off)
        if (this.row) {
          // Only the first row is read (the statements are one-row); later ones are skipped whole.
          this.skip = 1 + chunk.readUInt32BE(off + 1)
          continue
        }
        // DataRow: code, length, one column (int16 1), its length (-1: NULL), its bytes.
        if (chunk.length - off < 11) break
        if (chunk.readInt16BE(off + 5) !== 1) {
          // Not the one column this query is for: the row is skipped, the query fails.
          this.error ??= new Error(`${this.name}: expected one column`)
          this.skip = 1 + chunk.readUInt32BE(off + 1)
          continue
        }
        const len = chunk.readInt32BE(off + 7)
        off += 11
        this.row = true
        // The value's bytes in this chunk, and what is still to come. A socket's chunk is exactly
        // what one read returned (Node sizes its memory to the bytes read), and this connection's
        // reads hold nothing but this exchange (BindComplete, the row, CommandComplete,
        // ReadyForQuery), so the views keep only a few bytes more than the tile.
        if (len > 0) {
          const n = Math.min(len, chunk.length - off)
          if (n > 0) this.parts.push(chunk.subarray(off, off + n))
          this.pending = len - n
          off += n
        }
        continue
      }
      if (passFrom < 0) passFrom = off
      if (code === Z) {
        // The end of this exchange: pg's parser takes it (and anything after) and the queue goes on.
        this.detach()
        pass(chunk.length)
        return
      }
      const end = off + 1 + chunk.readUInt32BE(off + 1)
      if (end > chunk.length) break
      off = end
    }
    if (passFrom >= 0) {
      // Whole messages go to pg now; a message cut by the chunk's end waits for the next chunk.
      pass(off)
    }
    if (off < chunk.length) this.rest = chunk.subarray(off)
  }

  handleError (err: Error): void {
    // A failed statement: its ReadyForQuery follows and detaches (until then this query keeps
    // reading, so a message cut by a chunk's end is not lost); a broken connection: none will.
    if (this.error === null) this.error = err
    this.finish()
  }

  handleReadyForQuery (): void {
    this.detach()
    this.finish()
  }

  private finish (): void {
    if (this.done) return
    this.done = true
    if (this.error !== null) this.callback?.(this.error)
    else this.callback?.(null, this.parts)
  }

  handleCommandComplete (): void {}
  handleEmptyQuery (): void {}
  handleRowDescription (): void {}
  handleDataRow (): void {}
  handlePortalSuspended (): void {}
  handleCopyData (): void {}
  handleCopyInResponse (connection: PgConnection): void { connection.sendCopyFail('no COPY here') }
}

/**
 * Runs the named prepared statement `text` (numbered parameters) on `client` and resolves to the
 * bytes of its first column in its first row, as they arrived: views of the socket's chunks, in
 * order (none when there is no row or the value is NULL or empty). `joinBytes` makes one buffer.
 */
export function queryBytes (client: pg.Client, name: string, text: string, values: unknown[]): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const q = new BytesQuery(name, text, values)
    q.callback = (err, value) => { if (err !== null) reject(err); else resolve(value!) }
    client.query(q as unknown as pg.QueryConfig)
  })
}

/** A buffer, or its pieces as one buffer: the piece itself when there is one (no copy), else one copy of them all. */
export function joinBytes (parts: Buffer | readonly Buffer[]): Buffer {
  if (Buffer.isBuffer(parts)) return parts
  return parts.length === 1 ? parts[0] : Buffer.concat(parts)
}

/**
 * conn.query({ name, text, values }) without pg's copy of the config object: pg 8.2x copies
 * every config object by its property descriptors, a Query made from the text is not copied.
 */
export function namedQuery (conn: pg.Client, name: string, text: string, values: unknown[]): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    const q = new pg.Query(text, values) as pg.Query & { name?: string, callback?: (err: Error | null, r: pg.QueryResult) => void }
    q.name = name
    q.callback = (err, r) => { if (err !== null && err !== undefined) reject(err); else resolve(r) }
    conn.query(q)
  })
}

