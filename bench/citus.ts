import pg from 'pg'
import { createDb, type Db } from '../lib/db.js'
import { AREA, seedCity } from './city.js'
import { compare, http, row, startService, throughput, waitReady } from './support.js'

// Section `citus`: the same service, once on the plain PostgreSQL of the bench and once on a
// Citus cluster (CITUS_BENCH_URL, the coordinator; scripts/citus-cluster.sh start && createdb),
// measured in alternating rounds of one run. Both hold the same city (CITUS_BENCH_OBJECTS, default
// 100,000 objects) and answer the same create, get-by-id and bbox requests. Ratio = Citus / plain.
// On one machine the cluster's three nodes share the cores with everything else, so the ratio
// shows what routing through a coordinator costs, not what more machines would add.

export interface CitusBenchEnv {
  db: Db
  databaseUrl: string
  baseUrl: string
  tokenFor: (tenant: string) => string
  rounds: number
  env: Record<string, string | undefined>
  freePort: () => Promise<number>
}

interface Side { baseUrl: string, token: string, typeId: string, ids: string[] }

const BBOX_CENTRE = [(AREA.minX + AREA.maxX) / 2, (AREA.minY + AREA.maxY) / 2]
const BOX = [BBOX_CENTRE[0] - 0.01, BBOX_CENTRE[1] - 0.006, BBOX_CENTRE[0] + 0.01, BBOX_CENTRE[1] + 0.006]

async function reachable (url: string): Promise<string | null> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  try {
    await c.connect()
    const r = await c.query("SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'citus'")
    if (r.rows[0].n === 0) return 'the database has no citus extension (scripts/citus-cluster.sh createdb NAME)'
    return null
  } catch (err) {
    return (err as Error).message
  } finally {
    await c.end().catch(() => {})
  }
}

async function prepareSide (db: Db, url: string, baseUrl: string, tokenFor: (t: string) => string, count: number): Promise<Side> {
  const city = await seedCity(db, url, count)
  const ids = (await db.raw('SELECT id FROM objects WHERE tenant_id = ? ORDER BY id LIMIT 5000', [city.tenantId])).rows.map((r: { id: string }) => r.id)
  return { baseUrl, token: tokenFor(city.tenantId), typeId: city.typeIds[0], ids }
}

export async function benchCitus (env: CitusBenchEnv, say: (line: string) => void): Promise<void> {
  const url = process.env.CITUS_BENCH_URL
  if (url === undefined || url === '') {
    say('citus: skipped (set CITUS_BENCH_URL to a Citus coordinator database, e.g. postgres://postgres@127.0.0.1:9700/spatial_bench after scripts/citus-cluster.sh start && scripts/citus-cluster.sh createdb spatial_bench)')
    return
  }
  const problem = await reachable(url)
  if (problem !== null) {
    say(`citus: skipped (${url}: ${problem})`)
    return
  }
  const count = Number(process.env.CITUS_BENCH_OBJECTS ?? 100_000)
  const childEnv = { ...env.env, DATABASE_URL: url }
  const since = (t: number) => `${((Date.now() - t) / 1000).toFixed(0)} s`
  // The release on the cluster: migrations, then the tenant tables distributed by tenant_id.
  let t = Date.now()
  await new Promise<void>((resolve, reject) => startService('db/setup', childEnv).on('exit', code => code === 0 ? resolve() : reject(new Error(`setup on citus exited ${code}`))))
  const citusDb = createDb(url, { poolMax: 16 })
  const distributed: number = (await citusDb.raw("SELECT count(*)::int AS n FROM pg_dist_partition WHERE partmethod = 'h'")).rows[0].n
  if (distributed === 0) {
    await citusDb.destroy()
    throw new Error(`citus: the release distributed no table on ${url} (is it a database made by scripts/citus-cluster.sh createdb?)`)
  }
  say(`citus: release on the cluster in ${since(t)} (${distributed} tables distributed by tenant_id)`)
  const port = await env.freePort()
  const api = startService('server/main', { ...childEnv, PORT: String(port) })
  // An interrupted run (a timeout's SIGTERM) must not leave the cluster's API behind.
  const stop = () => { api.kill('SIGTERM'); process.exit(130) }
  process.once('SIGINT', stop).once('SIGTERM', stop)
  try {
    const citusBase = `http://127.0.0.1:${port}`
    await waitReady(citusBase)
    t = Date.now()
    const plain = await prepareSide(env.db, env.databaseUrl, env.baseUrl, env.tokenFor, count)
    say(`citus: seeded a city of ${count} objects on plain PostgreSQL in ${since(t)} (${env.databaseUrl})`)
    t = Date.now()
    const citus = await prepareSide(citusDb, url, citusBase, env.tokenFor, count)
    say(`citus: seeded the same city on the cluster in ${since(t)} (${url})`)
    const create = (s: Side) => (i: number) => http(s, s.token, 'POST', '/v1/objects',
      { typeId: s.typeId, attributes: { name: `c${i}`, height: i % 40 }, geometry: { type: 'Point', coordinates: [AREA.minX + (i % 400) / 1000, AREA.minY + (i % 250) / 1000] } })
    const get = (s: Side) => (i: number) => http(s, s.token, 'GET', `/v1/objects/${s.ids[i % s.ids.length]}`)
    const bbox = (s: Side) => () => http(s, s.token, 'POST', '/v1/queries/objects/run', { filters: [{ field: 'geometry', operator: 'bbox', value: BOX }], limit: 1000 })
    // Sized so that a round takes about a minute on a loaded 2-core machine, where creates on the
    // cluster are slow.
    const paths: Array<[string, number, number, (s: Side) => (i: number) => Promise<unknown>]> = [
      ['create, c16', 600, 16, create],
      ['get by id, c16', 3000, 16, get],
      ['bbox (up to 1,000 of the city), c10', 100, 10, bbox]
    ]
    say('citus: the service on a Citus cluster (coordinator + 2 workers, one machine) against the same service on plain PostgreSQL; ratio = citus / plain')
    for (const [label, n, c, op] of paths) {
      t = Date.now()
      const r = await compare(env.rounds, () => throughput(n, c, async i => { await op(citus)(i) }), () => throughput(n, c, async i => { await op(plain)(i) }))
      say(`  ${row(label, r)}  (${since(t)})`)
    }
  } finally {
    process.off('SIGINT', stop).off('SIGTERM', stop)
    api.kill('SIGTERM')
    await citusDb.destroy()
  }
}
