import { createHash } from 'node:crypto'
import pg from 'pg'
import type { Db } from '../lib/db.js'
import * as audit from '../lib/audit/index.js'
import { inclusionProofNodes } from '../lib/audit/sql.js'
import { hexes, leafOf, mth, verifyConsistency, verifyInclusion } from '../test/support/rfc9162.js'
import { benchContext, benchTenant, http } from './support.js'

// Section `merkle`: audit proofs (lib/audit tree.ts) at 10k, 100k and 1M events (BENCH_MILLION=0
// skips 1M). Each proof is timed call by call, one at a time: the HTTP request end to end, the lib
// call alone (authorization, the one statement, hashing, the signed head), and the statement alone
// (sql.inclusionProofNodes: the event and the O(log n) nodes); median and p95 in ms, over
// BENCH_ROUNDS alternating rounds. Sizes: hashes and bytes of the proof, bytes of the response.
//
// The volume is written by SQL in bulk (the events, then the tree by the backfill function
// audit_tree_rebuild, which builds what the sequencer builds); the last APPENDED events go through
// the real write path and sequencer, which extend that tree. Before timing, proofs are checked by
// the independent RFC 9162 verifier (test/support/rfc9162.ts) against a root the bench computes
// itself from the events' hashes (known: they are written by the bench), not from the database.

export interface MerkleBenchEnv {
  db: Db
  databaseUrl: string
  baseUrl: string
  tokenFor: (tenant: string) => string
  rounds: number
}

const APPENDED = 37
const CALLS = 150
const ACTOR = { sub: 'bench', roles: ['owner'] }

/** The chain hash the seed gives the event with sequence g (hex of SHA-256 of tenant || g). */
const seededHash = (tenant: string, g: number) => createHash('sha256').update(`${tenant}${g}`).digest('hex')

/**
 * n - APPENDED sequenced events by SQL (synthetic hashes: the tree does not check the chain) and
 * the tree by audit_tree_rebuild, then APPENDED events recorded and sequenced as the service does.
 * Returns seconds and the n chain hashes in sequence order.
 */
async function seed (pool: pg.Pool, db: Db, tenant: string, n: number): Promise<{ events: number, tree: number, hashes: string[] }> {
  const bulk = n - APPENDED
  const t0 = process.hrtime.bigint()
  await pool.query(`
    INSERT INTO audit_events (tenant_id, sequence, type, actor, resource_type, resource_id, data, occurred_at, previous_hash, hash)
    SELECT $1, g, 'object.updated', '{"sub":"bench","roles":["owner"]}', 'object', g::text, jsonb_build_object('i', g),
      date_trunc('milliseconds', now()), CASE WHEN g = 1 THEN repeat('0', 64) ELSE encode(sha256(convert_to($1 || (g - 1), 'UTF8')), 'hex') END,
      encode(sha256(convert_to($1 || g, 'UTF8')), 'hex')
    FROM generate_series(1, $2::bigint) g`, [tenant, bulk])
  await pool.query("INSERT INTO audit_heads (tenant_id, sequence, hash) VALUES ($1, $2::bigint, encode(sha256(convert_to($1 || $2::text, 'UTF8')), 'hex'))", [tenant, bulk])
  const t1 = process.hrtime.bigint()
  await pool.query('SELECT audit_tree_rebuild($1)', [tenant])
  const t2 = process.hrtime.bigint()
  for (let i = 0; i < APPENDED; i++) {
    await audit.recordStandalone(db, tenant, ACTOR, { type: 'object.updated', resourceType: 'object', resourceId: `a${i}`, data: { i } })
    if (i % 10 === 9) await audit.sequencePending(db, tenant) // appends in batches from several frontiers
  }
  await audit.sequencePending(db, tenant)
  const appended = (await pool.query('SELECT * FROM audit_events WHERE tenant_id = $1 AND sequence > $2 ORDER BY sequence', [tenant, bulk])).rows
  if (appended.length !== APPENDED) throw new Error(`merkle bench: ${appended.length} events appended, not ${APPENDED}`)
  // The appended events' hashes as a verifier gets them: recomputed from their fields.
  const hashes = Array.from({ length: bulk }, (_, i) => seededHash(tenant, i + 1)).concat(appended.map(r => audit.recomputeHash(r)))
  return { events: Number(t1 - t0) / 1e9, tree: Number(t2 - t1) / 1e9, hashes }
}

/** A fixed pseudo-random pick in [0, n) (the same in every round and for every side). */
const pick = (i: number, n: number) => Math.floor(((i * 2654435761) % 4294967296) / 4294967296 * n)

async function timed (op: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint()
  await op()
  return Number(process.hrtime.bigint() - t) / 1e6
}

function quantiles (ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]
  return `median ${at(0.5).toFixed(2).padStart(7)} ms  p95 ${at(0.95).toFixed(2).padStart(7)} ms`
}

/** Each side's per-call times over `rounds` alternating rounds of CALLS calls each. */
async function timeSides (rounds: number, sides: Array<[string, (i: number) => Promise<unknown>]>): Promise<Map<string, number[]>> {
  const out = new Map(sides.map(([label]) => [label, [] as number[]]))
  for (let r = 0; r < rounds; r++) {
    for (const [label, op] of sides) {
      for (let i = 0; i < CALLS; i++) out.get(label)!.push(await timed(() => op(i)))
    }
  }
  return out
}

export async function benchMerkle (env: MerkleBenchEnv, say: (line: string) => void): Promise<void> {
  const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 4 })
  const sizes = process.env.BENCH_MILLION === '0' ? [10_000, 100_000] : [10_000, 100_000, 1_000_000]
  const rounds = Math.max(1, env.rounds)
  say(`merkle: proofs one at a time, ${rounds} x ${CALLS} calls per figure; HTTP = the request end to end, lib = audit.inclusionProof/consistencyProof, statement = the one SQL statement alone`)
  try {
    for (const n of sizes) {
      const tenant = benchTenant(`merkle-${n}`)
      const took = await seed(pool, env.db, tenant, n)
      const ctx = benchContext(env.db, tenant)
      const token = env.tokenFor(tenant)
      say(`merkle ${n}: ${n - APPENDED} events by SQL in ${took.events.toFixed(1)} s, tree by audit_tree_rebuild in ${took.tree.toFixed(1)} s, ${APPENDED} more through the sequencer`)

      // The tree is the RFC 9162 tree of the chain: the bench's own root, the service's proofs.
      const leaves = took.hashes.map(h => Buffer.from(h, 'hex'))
      const root = mth(leaves)
      const head = await http(env, token, 'GET', '/v1/audit/tree-head')
      if (head.treeSize !== n || head.rootHash !== root.toString('hex')) throw new Error(`merkle ${n}: tree head ${head.treeSize}/${head.rootHash} is not the independent root ${root.toString('hex')}`)
      const picks = Array.from({ length: 200 }, (_, i) => pick(i, n) + 1)
      picks[0] = n - 1 // one leaf the sequencer appended
      const ids: string[] = (await pool.query('SELECT id FROM audit_events WHERE tenant_id = $1 AND sequence = ANY($2::bigint[]) ORDER BY array_position($2::bigint[], sequence)', [tenant, picks])).rows.map(r => r.id)
      const checked = [0, 1, 2].map(async k => {
        const p = await http(env, token, 'GET', `/v1/audit/events/${ids[k]}/inclusion-proof`)
        if (!verifyInclusion(p.leafIndex, n, leafOf(took.hashes[p.leafIndex]), hexes(p.auditPath), root)) throw new Error(`merkle ${n}: the inclusion proof of leaf ${p.leafIndex} does not verify`)
        return p
      })
      const samples = await Promise.all(checked)
      const firsts = picks.map((_, i) => 1 + pick(i + 7, n - 1))
      const c = await http(env, token, 'GET', `/v1/audit/consistency-proof?first=${firsts[0]}&second=${n}`)
      if (!verifyConsistency(firsts[0], n, mth(leaves.slice(0, firsts[0])), root, hexes(c.proof))) throw new Error(`merkle ${n}: the consistency proof ${firsts[0]} -> ${n} does not verify`)
      say(`merkle ${n}: tree head, inclusion proofs (leaves ${samples.map(p => p.leafIndex).join(', ')}) and a consistency proof (${firsts[0]} -> ${n}) verified by the RFC 9162 verifier against the bench's own root`)

      const sizesOf = await Promise.all(ids.slice(0, 50).map(id => audit.inclusionProof(ctx, id)))
      const hashCounts = sizesOf.map(p => p.auditPath.length)
      const json = sizesOf.map(p => JSON.stringify(p).length)
      say(`merkle ${n}: inclusion proof size ${Math.min(...hashCounts)}-${Math.max(...hashCounts)} hashes (${Math.min(...hashCounts) * 32}-${Math.max(...hashCounts) * 32} bytes), ` +
        `response ${Math.min(...json)}-${Math.max(...json)} bytes JSON with the signed head; consistency proof ${firsts[0]} -> ${n}: ${c.proof.length} hashes (${c.proof.length * 32} bytes)`)

      const inclusion = await timeSides(rounds, [
        ['HTTP', i => http(env, token, 'GET', `/v1/audit/events/${ids[i % ids.length]}/inclusion-proof`)],
        ['lib', i => audit.inclusionProof(ctx, ids[i % ids.length])],
        ['statement', i => inclusionProofNodes(env.db, tenant, ids[i % ids.length], undefined)]
      ])
      for (const [label, ms] of inclusion) say(`merkle ${n}: inclusion proof, ${label.padEnd(9)} ${quantiles(ms)}`)
      const consistency = await timeSides(rounds, [
        ['HTTP', i => http(env, token, 'GET', `/v1/audit/consistency-proof?first=${firsts[i % firsts.length]}&second=${n}`)],
        ['lib', i => audit.consistencyProof(ctx, { first: firsts[i % firsts.length], second: n })]
      ])
      for (const [label, ms] of consistency) say(`merkle ${n}: consistency proof, ${label.padEnd(9)} ${quantiles(ms)}`)
    }
  } finally {
    await pool.end()
  }
}
