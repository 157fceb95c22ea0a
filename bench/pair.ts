import { spawn } from 'node:child_process'
import http from 'node:http'
import path from 'node:path'
import jwt from 'jsonwebtoken'
import { median } from './support.js'

// Two builds of the API serving at once on the bench's database, asked the same GET in
// alternating blocks (A B, B A, ...): the machine's drift falls on both alike, which alternating
// whole bench runs (bench:ab) cannot promise for one path.
//
//   npx tsx bench/pair.ts <service dir A> <service dir B> <tenant> <path> [concurrency] [blocks] [requests per block]
//
// e.g. npx tsx bench/pair.ts .bench-ab/<sha> . bench-city-<id> '/v1/objects?limit=100' 10
// Prints both answers' status and size (they must match), each build's median requests/s and B / A.

const [dirA, dirB, tenant, target, conc = '1', blocks = '12', per = '300'] = process.argv.slice(2)
if (target === undefined) { process.stderr.write('usage: tsx bench/pair.ts <dir A> <dir B> <tenant> <path> [concurrency] [blocks] [per block]\n'); process.exit(2) }
const secret = 'bench-secret-that-is-at-least-32-characters'
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/spatial_bench'
const builds = [{ name: 'A', dir: path.resolve(dirA), port: 4901 }, { name: 'B', dir: path.resolve(dirB), port: 4902 }]
const procs = builds.map(b => spawn(process.execPath, [path.join(b.dir, 'dist/server/main.js')], {
  env: { ...process.env, DATABASE_URL: databaseUrl, AUTH_JWT_SECRET: secret, RATE_LIMIT_LIMIT: '100000000', LOG_LEVEL: 'error', PORT: String(b.port) },
  stdio: ['ignore', 'ignore', 'inherit']
}))
process.on('exit', () => { for (const p of procs) p.kill() })

const token = jwt.sign({ sub: 'bench', tenant, roles: ['owner'] }, secret, { algorithm: 'HS256', expiresIn: '1h' })
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
const get = (port: number): Promise<{ status: number, bytes: number }> => new Promise((resolve, reject) => {
  http.get({ host: '127.0.0.1', port, path: target, agent, headers: { authorization: `Bearer ${token}` } }, res => {
    let bytes = 0
    res.on('data', (c: Buffer) => { bytes += c.length })
    res.on('end', () => { resolve({ status: res.statusCode ?? 0, bytes }) })
  }).on('error', reject)
})

for (const b of builds) {
  for (let i = 0; ; i++) {
    try { await get(b.port); break } catch (err) { if (i > 100) throw err; await new Promise(resolve => setTimeout(resolve, 300)) }
  }
  const first = await get(b.port)
  process.stdout.write(`${b.name} (${b.dir}): ${first.status}, ${first.bytes} bytes\n`)
}

async function block (port: number): Promise<number> {
  let sent = 0
  const t0 = performance.now()
  await Promise.all(Array.from({ length: Number(conc) }, async () => { while (sent++ < Number(per)) await get(port) }))
  return Number(per) / ((performance.now() - t0) / 1000)
}

for (const b of builds) await block(b.port)
const rates: number[][] = [[], []]
for (let i = 0; i < Number(blocks); i++) {
  for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) rates[k].push(await block(builds[k].port))
}
const [a, b] = rates.map(median)
process.stdout.write(`${target} c${conc}: A ${a.toFixed(0)}/s, B ${b.toFixed(0)}/s, B / A ${(b / a).toFixed(3)} (${blocks} blocks of ${per} each)\n`)
process.exit(0)
