import pg from 'pg'
import type { Db } from '../lib/db.js'
import * as audit from '../lib/audit/index.js'
import { NODES_SQL } from '../lib/audit/sql.js'
import { consistencyRanges, inclusionRanges, keysOf, type NodeKey } from '../lib/audit/merkle.js'
import { benchContext, benchTenant, compare, http, throughput } from './support.js'

// Audit proofs (lib/audit tree.ts) at 10k, 100k and 1M events (BENCH_MILLION=0 skips 1M): the
// time of one inclusion proof (lib and HTTP) and of one consistency proof, against the raw SQL
// that fetches the same O(log n) stored nodes (keys computed outside the timing: the floor of
// any proof from this storage), and each proof's size.

export interface MerkleBenchEnv {
  db: Db
  databaseUrl: string
  baseUrl: string
  tokenFor: (tenant: string) => string
  rounds: number
}

/**
 * n sequenced events of one tenant, written by SQL (synthetic hashes: the tree does not check
 * the chain), then the tree by the backfill function (audit_tree_rebuild). Returns seconds.
 */
async function seed (pool: pg.Pool, tenant: string, n: number): Promise<{ events: number, tree: number }> {
  const t0 = process.hrtime.bigint()
  await pool.query(`
    INSERT INTO audit_events (tenant_id, sequence, type, actor, resource_type, resource_id, data, occurred_at, previous_hash, hash)
    SELECT $1, g, 'object.updated', '{"sub":"bench","roles":["owner"]}', 'object', g::text, jsonb_build_object('i', g),
      date_trunc('milliseconds', now()), encode(sha256(($1 || (g - 1))::bytea), 'hex'), encode(sha256(($1 || g)::bytea), 'hex')
    FROM generate_series(1, $2::bigint) g`, [tenant, n])
  await pool.query("INSERT INTO audit_heads (tenant_id, sequence, hash) VALUES ($1, $2::bigint, encode(sha256(($1 || $2::text)::bytea), 'hex'))", [tenant, n])
  const t1 = process.hrtime.bigint()
  await pool.query('SELECT audit_tree_rebuild($1)', [tenant])
  const t2 = process.hrtime.bigint()
  return { events: Number(t1 - t0) / 1e9, tree: Number(t2 - t1) / 1e9 }
}

// The lookup of sql.fetchNodes as a plain pg query: each key one index probe.
let param = 0
const RAW_NODES = NODES_SQL.replace(/\?/g, () => `$${++param}`)

function rawNodes (pool: pg.Pool, tenant: string, keys: NodeKey[]): Promise<pg.QueryResult> {
  return pool.query(RAW_NODES, [keys.map(k => k.level), keys.map(k => k.idx), tenant, tenant])
}

/** A fixed pseudo-random sequence of picks (the same in every round and for both sides). */
const pick = (i: number, n: number) => Math.floor(((i * 2654435761) % 4294967296) / 4294967296 * n)

export async function benchMerkle (env: MerkleBenchEnv, say: (line: string) => void): Promise<void> {
  const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 4 })
  const sizes = process.env.BENCH_MILLION === '0' ? [10_000, 100_000] : [10_000, 100_000, 1_000_000]
  say('merkle: one proof at a time (c1); ms = 1000 / (proofs/s); baseline = raw SQL fetching the same stored nodes')
  try {
    for (const n of sizes) {
      const tenant = benchTenant(`merkle-${n}`)
      const took = await seed(pool, tenant, n)
      say(`merkle ${n}: seeded ${n} events in ${took.events.toFixed(1)} s, tree built (backfill) in ${took.tree.toFixed(1)} s`)
      const ctx = benchContext(env.db, tenant)
      const token = env.tokenFor(tenant)
      const ids: string[] = (await pool.query('SELECT id FROM audit_events WHERE tenant_id = $1 AND sequence = ANY($2::bigint[]) ORDER BY sequence',
        [tenant, Array.from({ length: 200 }, (_, i) => pick(i, n) + 1)])).rows.map(r => r.id)
      const leafOfId = new Map<string, number>((await pool.query('SELECT id, sequence FROM audit_events WHERE tenant_id = $1 AND id = ANY($2::uuid[])', [tenant, ids])).rows.map(r => [r.id, Number(r.sequence) - 1]))
      const inclusionKeys = ids.map(id => keysOf([...inclusionRanges(leafOfId.get(id)!, n), [0, n]]))
      const calls = 300

      const sample = await audit.inclusionProof(ctx, ids[0])
      say(`merkle ${n}: inclusion proof of leaf ${sample.leafIndex}: ${sample.auditPath.length} hashes (${sample.auditPath.length * 32} bytes), ` +
        `${inclusionKeys[0].length} stored nodes read, response ${JSON.stringify(sample).length} bytes JSON`)
      say(msRow(`merkle ${n}: inclusion proof, lib vs raw SQL`, await compare(env.rounds,
        () => throughput(calls, 1, async i => { await audit.inclusionProof(ctx, ids[i % ids.length]) }),
        () => throughput(calls, 1, async i => { await rawNodes(pool, tenant, inclusionKeys[i % ids.length]) }))))
      say(msRow(`merkle ${n}: inclusion proof, HTTP vs raw SQL`, await compare(env.rounds,
        () => throughput(calls, 1, async i => { await http(env, token, 'GET', `/v1/audit/events/${ids[i % ids.length]}/inclusion-proof`) }),
        () => throughput(calls, 1, async i => { await rawNodes(pool, tenant, inclusionKeys[i % ids.length]) }))))

      const firsts = ids.map((_, i) => 1 + pick(i + 7, n - 1))
      const consistencyKeys = firsts.map(m => keysOf([...consistencyRanges(m, n), [0, m], [0, n]]))
      const c = await audit.consistencyProof(ctx, { first: firsts[0], second: n })
      say(`merkle ${n}: consistency proof ${firsts[0]} -> ${n}: ${c.proof.length} hashes (${c.proof.length * 32} bytes), ${consistencyKeys[0].length} stored nodes read`)
      say(msRow(`merkle ${n}: consistency proof, lib vs raw SQL`, await compare(env.rounds,
        () => throughput(calls, 1, async i => { await audit.consistencyProof(ctx, { first: firsts[i % firsts.length], second: n }) }),
        () => throughput(calls, 1, async i => { await rawNodes(pool, tenant, consistencyKeys[i % firsts.length]) }))))
    }
  } finally {
    await pool.end()
  }
}

/** Milliseconds per proof from the medians of proofs/s; ratio = candidate/baseline throughput (1 = as fast as the raw fetch). */
function msRow (label: string, r: { candidate: number, baseline: number, ratio: number }): string {
  return `${label.padEnd(52)} ${(1000 / r.candidate).toFixed(2).padStart(7)} ms  vs ${(1000 / r.baseline).toFixed(2).padStart(7)} ms  ratio ${r.ratio.toFixed(2)}`
}
