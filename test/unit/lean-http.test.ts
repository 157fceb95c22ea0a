import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { LeanClient } from '../../bench/lean-http.js'

// The bench's load generator (bench/lean-http.ts) reads what node:http's server sends: answers
// framed by Content-Length, chunked ones, bodiless ones, one that closes its connection, and many
// at once over a pool smaller than the requests in flight.

describe('bench lean HTTP client', () => {
  const big = Buffer.alloc(300_000, 'x')
  let server: Server
  let client: LeanClient
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/chunked') {
        res.writeHead(200)
        for (let i = 0; i < 50; i++) res.write(`line ${i}\n`)
        res.end()
      } else if (req.url === '/big') res.writeHead(200, { 'Content-Length': big.length }).end(big)
      else if (req.url === '/not-modified') res.writeHead(304).end()
      else if (req.url === '/close') res.writeHead(200, { Connection: 'close', 'Content-Length': 2 }).end('ok')
      else {
        const chunks: Buffer[] = []
        req.on('data', (c: Buffer) => chunks.push(c))
        req.on('end', () => res.writeHead(201).end(JSON.stringify({ auth: req.headers.authorization, body: JSON.parse(Buffer.concat(chunks).toString()) })))
      }
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    client = new LeanClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 4)
  })
  after(() => { client.close(); server.close() })

  it('reads every framing, one after another on kept-alive connections', async () => {
    for (let round = 0; round < 3; round++) {
      const chunked = await client.request('GET', '/chunked', '')
      assert.equal(chunked.status, 200)
      assert.equal(chunked.body.toString(), Array.from({ length: 50 }, (_, i) => `line ${i}\n`).join(''))
      const b = await client.request('GET', '/big', '')
      assert.ok(b.body.equals(big))
      const nm = await client.request('GET', '/not-modified', '')
      assert.deepEqual([nm.status, nm.body.length], [304, 0])
      assert.equal((await client.request('GET', '/close', '')).body.toString(), 'ok')
    }
  })

  it('sends bodies and headers, and answers each of many requests in flight with its own answer', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      client.request('POST', '/echo', 'Authorization: Bearer t\r\n', Buffer.from(JSON.stringify({ i })))))
    assert.deepEqual(answers.map(a => [a.status, JSON.parse(a.body.toString())]), Array.from({ length: 20 }, (_, i) => [201, { auth: 'Bearer t', body: { i } }]))
  })
})
