import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import jwt from 'jsonwebtoken'
import { createDb } from '../lib/db.js'
import * as counters from '../lib/counters/index.js'
import { freePort, httpText, median, throughput, waitReady } from './support.js'
import { AREA, seedCity } from './city.js'
import { FLOOR_STATEMENTS } from './raw-sql.js'

// A/B of the create path: two API builds (directories) side by side on one bench database, each
// writing into a city of its own, in alternating rounds; per round and side: creates/s, the API
// process's CPU per create and the CPU of the database backends per create (/proc, utime+stime),
// and the raw statement's rate in the same round. Usage:
//   BENCH_DATABASE_URL=... tsx bench/ab-create.ts <dirA> <dirB> [rounds]
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/spatial_bench'
const SECRET = 'bench-secret-that-is-at-least-32-characters'
const [dirA, dirB] = [process.argv[2], process.argv[3]]
const ROUNDS = Number(process.argv[4] ?? 5)
const env = { ...process.env, DATABASE_URL, AUTH_JWT_SECRET: SECRET, RATE_LIMIT_LIMIT: '100000000', LOG_LEVEL: 'error' }

const ticks = (pid: number): number => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return Number(f[11]) + Number(f[12])
  } catch { return 0 }
}

function start (dir: string, port: number): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], { cwd: dir, env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] })
}

await new Promise<void>((resolve, reject) => spawn(process.execPath, ['--import', 'tsx', 'db/setup.ts'], { cwd: dirB, env, stdio: ['ignore', 'ignore', 'inherit'] })
  .on('exit', code => code === 0 ? resolve() : reject(new Error(`setup exited ${code}`))))
const db = createDb(DATABASE_URL, { poolMax: 4 })
await db.raw('TRUNCATE objects, object_versions, audit_events, audit_heads, audit_tree_nodes, outbox_events, counter_deltas CASCADE')
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 16 })
const sides = await Promise.all([dirA, dirB].map(async (dir, k) => {
  const city = await seedCity(db, DATABASE_URL, 100_000, k + 1)
  const port = await freePort()
  const api = start(dir, port)
  const baseUrl = `http://127.0.0.1:${port}`
  await waitReady(baseUrl)
  const token = jwt.sign({ sub: 'bench', tenant: city.tenantId, roles: ['owner'] }, SECRET, { algorithm: 'HS256', expiresIn: '12h' })
  return { name: k === 0 ? 'A' : 'B', dir, city, api, baseUrl, token }
}))
const attrs = (i: number) => ({ name: `new ${i}`, height: i % 50 })
const point = (i: number) => ({ type: 'Point', coordinates: [AREA.minX + (i % 400) / 1000, AREA.minY + (i % 250) / 1000] })
const actor = JSON.stringify({ sub: 'bench', roles: ['owner'] })

/** CPU ticks of this database's backends by pid (a backend that ends between two reads loses its last ticks). */
async function backendTicks (): Promise<Map<number, number>> {
  const r = await pool.query('SELECT pid FROM pg_stat_activity WHERE datname = current_database()')
  return new Map(r.rows.map(row => [row.pid as number, ticks(row.pid)]))
}
const since = (before: Map<number, number>, after: Map<number, number>): number =>
  [...after].reduce((s, [pid, t]) => s + t - (before.get(pid) ?? 0), 0)

/** Waits (up to 5 s) until every audit event is sequenced: the background work of a round belongs to it. */
async function settle (): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await pool.query('SELECT 1 FROM audit_events WHERE sequence IS NULL LIMIT 1')).rowCount === 0) break
    await new Promise(r => setTimeout(r, 50))
  }
  await new Promise(r => setTimeout(r, 100))
}

type Side = typeof sides[number]
async function round (s: Side, n: number, c: number) {
  const typeId = s.city.typeIds[0]
  const api0 = ticks(s.api.pid!)
  const db0 = await backendTicks()
  const rate = await throughput(n, c, async i => { await httpText(s, s.token, 'POST', '/v1/objects', { typeId, attributes: attrs(i), geometry: point(i) }) })
  await settle()
  const api = (ticks(s.api.pid!) - api0) * 10_000 / n
  const dbus = since(db0, await backendTicks()) * 10_000 / n
  return { rate, api, db: dbus }
}
async function rawRound (s: Side, n: number, c: number) {
  const typeId = s.city.typeIds[0]
  const db0 = await backendTicks()
  const rate = await throughput(n, c, async i => {
    await pool.query({ name: 'create', text: FLOOR_STATEMENTS.create, values: [randomUUID(), s.city.tenantId, typeId, JSON.stringify(attrs(i)), JSON.stringify(point(i)), actor] })
  })
  await settle()
  return { rate, db: since(db0, await backendTicks()) * 10_000 / n }
}

const chores = async () => { await counters.fold(db); await counters.vacuum(db) }
try {
  for (const s of sides) await round(s, 4000, 16)
  await rawRound(sides[0], 2000, 16)
  for (const [c, n] of [[1, 600], [16, 2000]] as const) {
    const got = new Map<string, Array<{ rate: number, api: number, db: number, raw: number, rawDb: number }>>(sides.map(s => [s.name, []]))
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse()
      for (const s of order) {
        await chores()
        const { rate: raw, db: rawDb } = await rawRound(s, n, c)
        const m = await round(s, n, c)
        got.get(s.name)!.push({ ...m, raw, rawDb })
        console.log(`c${c} round ${r} ${s.name}: ${m.rate.toFixed(0)}/s (raw ${raw.toFixed(0)}/s, ratio ${(m.rate / raw).toFixed(2)}), API ${m.api.toFixed(0)} us/create, DB ${m.db.toFixed(0)} us/create (raw ${rawDb.toFixed(0)})`)
      }
    }
    for (const s of sides) {
      const xs = got.get(s.name)!
      console.log(`c${c} ${s.name} (${s.dir}) medians: ${median(xs.map(x => x.rate)).toFixed(0)}/s, raw ${median(xs.map(x => x.raw)).toFixed(0)}/s, ratio ${median(xs.map(x => x.rate / x.raw)).toFixed(2)}, API ${median(xs.map(x => x.api)).toFixed(0)} us, DB ${median(xs.map(x => x.db)).toFixed(0)} us (raw ${median(xs.map(x => x.rawDb)).toFixed(0)} us)`)
    }
  }
} finally {
  for (const s of sides) s.api.kill('SIGTERM')
  await pool.end()
  await db.destroy()
}
