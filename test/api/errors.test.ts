import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { Writable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { createLogger } from '../../lib/log.js'
import { startServer, newTenant, publishedType, useOwnerSession, type Response } from '../support/harness.js'

// docs/behaviour.md "General": error body, malformed JSON, MAX_BODY_BYTES, unknown fields; SPEC 7.

const MAX = 4096

function assertErrorBody (res: Response, status: number, code: string): void {
  assert.equal(res.status, status, res.text)
  assert.match(res.headers.get('content-type') ?? '', /application\/json/)
  assert.deepEqual(Object.keys(res.body), ['error'])
  assert.deepEqual(Object.keys(res.body.error).sort(), ['code', 'details', 'message'])
  assert.equal(res.body.error.code, code)
  assert.equal(typeof res.body.error.message, 'string')
  assert.equal(typeof res.body.error.details, 'object')
  assert.ok(res.headers.get('x-request-id'))
}

/** A raw request through node:http, so the test controls framing (chunked, no Content-Length). */
function rawRequest (base: string, opts: { method: string, path: string, headers: Record<string, string>, chunks: string[] }): Promise<Response> {
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: opts.path, method: opts.method, headers: opts.headers, agent: false }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', d => { text += d })
      res.on('end', () => {
        const headers = new Headers()
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v)
        let body: unknown = text
        try { body = JSON.parse(text) } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, headers, body, text })
      })
    })
    // The server may answer 413 and close before the whole body is sent.
    req.on('error', err => (err as NodeJS.ErrnoException).code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err))
    for (const c of opts.chunks) req.write(c)
    req.end()
  })
}

describe('request bodies and error responses', () => {
  const ctx = useOwnerSession({ env: { MAX_BODY_BYTES: String(MAX) }, tenantPrefix: 'err', type: true })

  const post = (raw: string, headers: Record<string, string> = { 'Content-Type': 'application/json' }) =>
    ctx.s.request('POST', '/v1/objects', { token: ctx.owner.token, raw, headers })

  it('answers malformed JSON with 400 BAD_REQUEST', async () => {
    assertErrorBody(await post('{"typeId": '), 400, 'BAD_REQUEST')
    assertErrorBody(await post('{typeId: 1}'), 400, 'BAD_REQUEST')
  })

  it('answers a body over MAX_BODY_BYTES (Content-Length) with 413 PAYLOAD_TOO_LARGE', async () => {
    const body = JSON.stringify({ typeId: ctx.typeId, attributes: { name: 'x'.repeat(MAX) } })
    assertErrorBody(await post(body), 413, 'PAYLOAD_TOO_LARGE')
  })

  it('accepts a body of exactly MAX_BODY_BYTES and refuses one byte more', async () => {
    const skeleton = JSON.stringify({ typeId: ctx.typeId, attributes: { name: '' } })
    const exact = JSON.stringify({ typeId: ctx.typeId, attributes: { name: 'x'.repeat(MAX - skeleton.length) } })
    assert.equal(Buffer.byteLength(exact), MAX)
    const ok = await post(exact)
    assert.equal(ok.status, 201, ok.text)
    const over = JSON.stringify({ typeId: ctx.typeId, attributes: { name: 'x'.repeat(MAX - skeleton.length + 1) } })
    assertErrorBody(await post(over), 413, 'PAYLOAD_TOO_LARGE')
  })

  it('answers a chunked body over MAX_BODY_BYTES with 413 PAYLOAD_TOO_LARGE', async () => {
    const chunks = ['{"typeId":"' + ctx.typeId + '","attributes":{"name":"']
    for (let i = 0; i < 10; i++) chunks.push('y'.repeat(1000))
    chunks.push('"}}')
    const res = await rawRequest(ctx.s.base, {
      method: 'POST', path: '/v1/objects', chunks,
      headers: { Authorization: `Bearer ${ctx.owner.token}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }
    })
    assertErrorBody(res, 413, 'PAYLOAD_TOO_LARGE')
  })

  it('accepts a small chunked body', async () => {
    const res = await rawRequest(ctx.s.base, {
      method: 'POST', path: '/v1/objects', chunks: ['{"typeId":"', ctx.typeId, '","attributes":{"name":"chunked"}}'],
      headers: { Authorization: `Bearer ${ctx.owner.token}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }
    })
    assert.equal(res.status, 201, res.text)
    assert.equal((res.body as { attributes: { name: string } }).attributes.name, 'chunked')
  })

  it('answers a non-JSON content type with a body with 400', async () => {
    assertErrorBody(await post('typeId=1', { 'Content-Type': 'application/x-www-form-urlencoded' }), 400, 'BAD_REQUEST')
    assertErrorBody(await post(JSON.stringify({ typeId: ctx.typeId }), { 'Content-Type': 'text/plain' }), 400, 'BAD_REQUEST')
  })

  it('decompresses a gzip body, and answers 400 BAD_REQUEST when it is not gzip at all', async () => {
    const body = gzipSync(JSON.stringify({ typeId: ctx.typeId, attributes: { name: 'zipped' } }))
    const ok = await fetch(ctx.s.base + '/v1/objects', {
      method: 'POST', body, headers: { Authorization: `Bearer ${ctx.owner.token}`, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }
    })
    assert.equal(ok.status, 201, await ok.text())
    assertErrorBody(await post(JSON.stringify({ typeId: ctx.typeId }), { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }), 400, 'BAD_REQUEST')
    assertErrorBody(await post(JSON.stringify({ typeId: ctx.typeId }), { 'Content-Type': 'application/json', 'Content-Encoding': 'compress' }), 400, 'BAD_REQUEST')
  })

  it('answers 400 BAD_REQUEST to a br body that is not Brotli (not a 500)', async () => {
    // Found by test/faults/hostile-input.test.ts: Brotli's errors are not zlib's Z_* codes.
    for (const bytes of [[30], [0xff, 0xff, 0xff], [0x1b, 0x03, 0x00]]) {
      const res = await fetch(ctx.s.base + '/v1/objects', {
        method: 'POST', body: Uint8Array.from(bytes), headers: { Authorization: `Bearer ${ctx.owner.token}`, 'Content-Type': 'application/json', 'Content-Encoding': 'br' }
      })
      const text = await res.text()
      assert.equal(res.status, 400, text)
      assert.equal(JSON.parse(text).error.code, 'BAD_REQUEST')
    }
  })

  it('answers a gzip body that inflates beyond MAX_BODY_BYTES with 413', async () => {
    const bomb = gzipSync(JSON.stringify({ typeId: ctx.typeId, attributes: { name: 'z'.repeat(MAX * 50) } }))
    assert.ok(bomb.length < MAX, 'the compressed body itself is small')
    const res = await fetch(ctx.s.base + '/v1/objects', {
      method: 'POST', body: bomb, headers: { Authorization: `Bearer ${ctx.owner.token}`, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }
    })
    const text = await res.text()
    assert.equal(res.status, 413, text)
    assert.equal(JSON.parse(text).error.code, 'PAYLOAD_TOO_LARGE')
  })

  it('accepts application/json with a charset', async () => {
    const res = await post(JSON.stringify({ typeId: ctx.typeId }), { 'Content-Type': 'application/json; charset=utf-8' })
    assert.equal(res.status, 201, res.text)
  })

  it('answers an unknown top-level field with 400 VALIDATION_ERROR naming it', async () => {
    const res = await ctx.owner.post('/v1/objects', { typeId: ctx.typeId, colour: 'red' })
    assertErrorBody(res, 400, 'VALIDATION_ERROR')
    assert.equal(res.body.error.details.field, 'colour')
    assert.equal(typeof res.body.error.details.reason, 'string')
  })

  it('answers a JSON body that is not an object with 400 VALIDATION_ERROR', async () => {
    assertErrorBody(await ctx.owner.post('/v1/objects', [ctx.typeId]), 400, 'VALIDATION_ERROR')
  })

  it('answers an unknown route with 404 NOT_FOUND in the error body', async () => {
    assertErrorBody(await ctx.owner.get('/v1/no-such-thing'), 404, 'NOT_FOUND')
    assertErrorBody(await ctx.s.request('GET', '/v2/objects'), 404, 'NOT_FOUND')
  })

  it('answers a wrong method with 405, an Allow header and the error body', async () => {
    const res = await ctx.owner.put('/v1/objects', {})
    assertErrorBody(res, 405, 'BAD_REQUEST')
    assert.match(res.headers.get('allow') ?? '', /GET/)
    assert.match(res.headers.get('allow') ?? '', /POST/)
    assertErrorBody(await ctx.s.request('DELETE', '/v1/health/live'), 405, 'BAD_REQUEST')
  })

  it('answers a method the service implements nowhere with 501 and the error body', async () => {
    assertErrorBody(await ctx.s.request('PROPFIND', '/v1/objects', { token: ctx.owner.token }), 501, 'BAD_REQUEST')
  })
})

describe('500 INTERNAL_ERROR', () => {
  const LEAKS = [/\bat\s+\S+\s*\(/, /stack/i, /select|insert|update\s|from\s+"/i, /knex|pg|postgres/i, /\.ts:\d+/, /connection|transaction/i]

  function assertNoLeak (res: Response): void {
    assertErrorBody(res, 500, 'INTERNAL_ERROR')
    assert.equal(res.body.error.message, 'internal server error')
    assert.deepEqual(res.body.error.details, {})
    for (const leak of LEAKS) assert.doesNotMatch(res.text, leak)
  }

  it('when Postgres refuses a statement: fixed body, error logged once with the request id', async () => {
    const tenant = newTenant('boom')
    const s = await startServer()
    const typeId = await publishedType(s.as(tenant, ['owner']))
    await s.close()
    // Every transaction read-only: the INSERT fails in Postgres (25006) with the SQL in knex's message.
    const url = new URL(s.config.databaseUrl ?? '')
    url.searchParams.set('options', '-c default_transaction_read_only=on')
    const lines: string[] = []
    const log = createLogger('test', 'error', new Writable({ write (chunk, _enc, cb) { lines.push(String(chunk)); cb() } }))
    const ro = await startServer({ DATABASE_URL: url.toString() }, { log })
    try {
      const res = await ro.as(tenant, ['owner']).post('/v1/objects', { typeId, attributes: { name: 'never stored' } })
      assertNoLeak(res)
      const errors = lines.map(l => JSON.parse(l)).filter(l => l.level >= 50)
      assert.equal(errors.length, 1, lines.join(''))
      assert.equal(errors[0].requestId, res.headers.get('x-request-id'))
      assert.match(errors[0].err.message, /read-only/)
    } finally {
      await ro.close()
    }
  })

  it('when the database pool is gone', async () => {
    const s = await startServer({}, { log: createLogger('test', 'error', new Writable({ write (_c, _e, cb) { cb() } })) })
    try {
      const c = s.as(newTenant('boom'), ['owner'])
      assert.equal((await c.get('/v1/objects')).status, 200)
      await s.db.destroy()
      assertNoLeak(await c.get('/v1/objects'))
      assertNoLeak(await c.get('/v1/object-types'))
    } finally {
      await s.close()
    }
  })
})
