import pg from 'pg'
import type { Db } from '../lib/db.js'
import * as objects from '../lib/objects/index.js'
import * as objectTypes from '../lib/object-types/index.js'
import { benchContext, benchTenant, http, median, row, throughput, untilAlone } from './support.js'

export interface GraphqlBenchEnv {
  db: Db
  databaseUrl: string
  baseUrl: string
  tokenFor: (tenant: string) => string
  rounds: number
}

// The page both APIs are asked for: 100 objects with typeId, attributes and geometry.
const GRAPHQL_PAGE = { query: '{ objects(limit: 100) { id typeId attributes geometry } }' }

// The baseline: the same page and its total as ONE statement, the JSON built by PostgreSQL.
const RAW_PAGE = `
  SELECT json_build_object(
    'items', coalesce(json_agg(json_build_object('id', o.id, 'typeId', o.type_id, 'attributes', o.attributes,
      'geometry', ST_AsGeoJSON(o.geom)::json) ORDER BY o.created_at, o.id), '[]'),
    'total', (SELECT count(*) FROM objects WHERE tenant_id = $1 AND deleted_at IS NULL)) AS page
  FROM (SELECT * FROM objects WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id LIMIT 100) o`


/**
 * `objects(limit: 100)` through GraphQL next to `GET /v1/objects?limit=100`, each against the raw
 * SQL baseline, measured in the same alternating rounds; the last row is GraphQL / REST.
 */
export async function benchGraphql (env: GraphqlBenchEnv): Promise<string[]> {
  // The sections before this one used other tenants (GraphQL is a heavy request: lane and pace).
  const othersLastAt = Date.now()
  const tenant = benchTenant('graphql')
  const token = env.tokenFor(tenant)
  const ctx = benchContext(env.db, tenant)
  const typeId = (await objectTypes.createObjectType(ctx, { key: 'site', name: 'Site', geometry: { required: true, types: ['Point'] } })).id
  await objectTypes.publishObjectType(ctx, typeId, { to: 'published' })
  for (let i = 0; i < 300; i++) {
    await objects.createObject(ctx, { typeId, attributes: { name: `site ${i}`, height: i % 50, tags: ['a', 'b'] }, geometry: { type: 'Point', coordinates: [13 + i / 1000, 52.5] } })
  }
  const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 16 })
  const out: string[] = []
  await untilAlone(othersLastAt, line => { out.push(line) })
  for (const [c, n] of [[1, 200], [8, 600]] as const) {
    const raw: number[] = []
    const rest: number[] = []
    const graphql: number[] = []
    for (let r = 0; r < env.rounds; r++) {
      raw.push(await throughput(n, c, async () => { await pool.query(RAW_PAGE, [tenant]) }))
      rest.push(await throughput(n, c, async () => { await http(env, token, 'GET', '/v1/objects?limit=100') }))
      graphql.push(await throughput(n, c, async () => {
        const res = await http(env, token, 'POST', '/v1/graphql', GRAPHQL_PAGE)
        if (res.errors !== undefined) throw new Error(JSON.stringify(res.errors))
      }))
    }
    const base = median(raw)
    const figure = (xs: number[]) => ({ candidate: median(xs), baseline: base, ratio: median(xs) / base })
    out.push(row(`objects page of 100: REST vs raw SQL, c${c}`, figure(rest), 'pages/s'))
    out.push(row(`objects page of 100: GraphQL vs raw SQL, c${c}`, figure(graphql), 'pages/s'))
    out.push(row(`objects page of 100: GraphQL vs REST, c${c}`, { candidate: median(graphql), baseline: median(rest), ratio: median(graphql) / median(rest) }, 'pages/s'))
  }
  await pool.end()
  return out
}
