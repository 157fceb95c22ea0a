import type { ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import jwt from 'jsonwebtoken'
import { benchTenant, compare, freePort, http, median, row, startService, throughput } from './support.js'

// Embedded mode (PGlite in the API's process) next to PostgreSQL mode (the bench's API on the
// bench database), in the same run with the same counts: create and get-by-id rates over HTTP at
// concurrency 1 and 8, the API process's CPU per request (embedded: API, worker and database;
// PostgreSQL mode: the API only, the server's CPU is a separate process), its resident memory at
// idle, and the first start of a fresh data folder. Ratio = embedded / PostgreSQL.

interface Side { baseUrl: string, token: string, typeId: string, ids: string[], pid: number, cpuUs: number[] }

const CREATES = 100
const GETS = 500

/** CPU time (user + system) of a process so far, in microseconds (clock ticks of 10 ms). */
function cpuUs (pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) * 10_000
}

/** `throughput`, also recording the side's API process CPU per request. */
async function measured (s: Side, total: number, c: number, op: (s: Side) => (i: number) => Promise<void>): Promise<number> {
  const before = cpuUs(s.pid)
  const rate = await throughput(total, c, op(s))
  s.cpuUs.push((cpuUs(s.pid) - before) / total)
  return rate
}



function rssMb (pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m === null ? NaN : Number(m[1]) / 1024
}

async function prepare (baseUrl: string, token: string, pid: number): Promise<Side> {
  const t = await http({ baseUrl }, token, 'POST', '/v1/object-types', {
    key: 'pt', name: 'Point', geometry: { types: ['Point'] },
    attributeSchema: { type: 'object', properties: { n: { type: 'number' } } }
  })
  await http({ baseUrl }, token, 'POST', `/v1/object-types/${t.id}/publish`, { to: 'published' })
  return { baseUrl, token, typeId: t.id, ids: [], pid, cpuUs: [] }
}

const create = (s: Side) => async (i: number) => {
  const o = await http(s, s.token, 'POST', '/v1/objects', { typeId: s.typeId, attributes: { n: i }, geometry: { type: 'Point', coordinates: [13 + (i % 100) / 1000, 52.5] } })
  s.ids.push(o.id)
}
const getById = (s: Side) => async (i: number) => { await http(s, s.token, 'GET', `/v1/objects/${s.ids[i % s.ids.length]}`) }

export async function benchEmbedded (ctx: { baseUrl: string, tokenFor: (tenant: string) => string, rounds: number, apiPid: number }): Promise<string[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-embedded-'))
  const port = await freePort()
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'DATABASE_URL' && k !== 'AUTH_JWT_SECRET') env[k] = v
  const baseUrl = `http://127.0.0.1:${port}`
  const spawnService = () => startService('embedded/main', { ...env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'error', RATE_LIMIT_LIMIT: '100000000' })
  /** Seconds until /v1/health/ready answers 200. */
  const ready = async (p: ChildProcess): Promise<number> => {
    const t0 = Date.now()
    for (;;) {
      if (p.exitCode !== null) throw new Error(`embedded service exited ${p.exitCode}`)
      if (await fetch(`${baseUrl}/v1/health/ready`).then(r => r.status === 200, () => false)) return (Date.now() - t0) / 1000
      if (Date.now() - t0 > 900_000) throw new Error('embedded service not ready in 15 minutes')
      await new Promise(resolve => setTimeout(resolve, 250))
    }
  }
  const stop = async (p: ChildProcess) => {
    if (p.exitCode === null) {
      const exited = new Promise(resolve => p.once('exit', resolve))
      p.kill('SIGTERM')
      await exited
    }
  }
  let proc = spawnService()
  try {
    const firstStart = await ready(proc)
    const secret = fs.readFileSync(path.join(dataDir, 'jwt-secret'), 'utf8').trim()
    const tenant = benchTenant('embedded')
    const emb = await prepare(baseUrl, jwt.sign({ sub: 'bench', tenant, roles: ['owner'] }, secret, { algorithm: 'HS256', expiresIn: '12h' }), proc.pid ?? 0)
    const pgs = await prepare(ctx.baseUrl, ctx.tokenFor(benchTenant('embedded-pg')), ctx.apiPid)
    // Idle: both answered a few requests; let timers settle.
    await new Promise(resolve => setTimeout(resolve, 5000))
    const idle = { candidate: rssMb(proc.pid ?? 0), baseline: rssMb(ctx.apiPid), ratio: 0 }
    idle.ratio = idle.candidate / idle.baseline
    const lines = [`embedded mode (PGlite in the API process) vs PostgreSQL mode; first start of a fresh data folder took ${firstStart.toFixed(0)} s; load ${os.loadavg().map(l => l.toFixed(1)).join(' ')}`]
    const cpuRow = (label: string) => {
      const r = { candidate: median(emb.cpuUs), baseline: median(pgs.cpuUs), ratio: 0 }
      r.ratio = r.candidate / r.baseline
      emb.cpuUs.length = 0
      pgs.cpuUs.length = 0
      return row(`${label}, API process CPU`, r, 'µs/req')
    }
    const cases: Array<[string, number, (s: Side) => (i: number) => Promise<void>]> = [['create', CREATES, create], ['get by id', GETS, getById]]
    for (const [label, total, op] of cases) {
      for (const c of [1, 8]) {
        lines.push(row(`${label}, c${c} (embedded vs postgres)`, await compare(ctx.rounds, () => measured(emb, total, c, op), () => measured(pgs, total, c, op))))
        lines.push(cpuRow(`${label}, c${c}`))
      }
    }
    lines.push(row('API process RSS at idle (embedded vs postgres)', idle, 'MB'))
    await stop(proc)
    proc = spawnService()
    lines.push(`embedded mode's later start (the same data folder): ${(await ready(proc)).toFixed(0)} s`)
    lines.push(`load at the end ${os.loadavg().map(l => l.toFixed(1)).join(' ')}`)
    return lines
  } finally {
    await stop(proc)
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
