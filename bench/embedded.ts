import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import jwt from 'jsonwebtoken'
import { benchTenant, compare, freePort, http, row, throughput } from './support.js'

// Embedded mode (PGlite in the API's process) next to PostgreSQL mode (the bench's API on the
// bench database), in the same run: create and get-by-id rates over HTTP at concurrency 1 and 8,
// and the API process's resident memory at idle. Ratio = embedded / PostgreSQL. The PostgreSQL
// server's own memory is not in its figure (it is a separate, shared process).

interface Side { baseUrl: string, token: string, typeId: string, ids: string[] }


function rssMb (pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m === null ? NaN : Number(m[1]) / 1024
}

async function prepare (baseUrl: string, token: string): Promise<Side> {
  const t = await http({ baseUrl }, token, 'POST', '/v1/object-types', {
    key: 'pt', name: 'Point', geometry: { types: ['Point'] },
    attributeSchema: { type: 'object', properties: { n: { type: 'number' } } }
  })
  await http({ baseUrl }, token, 'POST', `/v1/object-types/${t.id}/publish`, { to: 'published' })
  return { baseUrl, token, typeId: t.id, ids: [] }
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
  const proc = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], { env: { ...env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'error', RATE_LIMIT_LIMIT: '100000000' }, stdio: ['ignore', 'ignore', 'inherit'] })
  const baseUrl = `http://127.0.0.1:${port}`
  try {
    const t0 = Date.now()
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`embedded service exited ${proc.exitCode}`)
      if (await fetch(`${baseUrl}/v1/health/ready`).then(r => r.status === 200, () => false)) break
      if (Date.now() - t0 > 900_000) throw new Error('embedded service not ready in 15 minutes')
      await new Promise(resolve => setTimeout(resolve, 500))
    }
    const firstStart = (Date.now() - t0) / 1000
    const secret = fs.readFileSync(path.join(dataDir, 'jwt-secret'), 'utf8').trim()
    const tenant = benchTenant('embedded')
    const emb = await prepare(baseUrl, jwt.sign({ sub: 'bench', tenant, roles: ['owner'] }, secret, { algorithm: 'HS256' }))
    const pgs = await prepare(ctx.baseUrl, ctx.tokenFor(benchTenant('embedded-pg')))
    // Idle: both answered a few requests; let timers settle.
    await new Promise(resolve => setTimeout(resolve, 5000))
    const idle = { candidate: rssMb(proc.pid ?? 0), baseline: rssMb(ctx.apiPid), ratio: 0 }
    idle.ratio = idle.candidate / idle.baseline
    const lines = [`embedded mode (PGlite in the API process) vs PostgreSQL mode; first start of a fresh data folder took ${firstStart.toFixed(0)} s`]
    for (const c of [1, 8]) {
      lines.push(row(`create, c${c} (embedded vs postgres)`, await compare(ctx.rounds, () => throughput(200, c, create(emb)), () => throughput(200, c, create(pgs)))))
    }
    for (const c of [1, 8]) {
      lines.push(row(`get by id, c${c} (embedded vs postgres)`, await compare(ctx.rounds, () => throughput(1000, c, getById(emb)), () => throughput(1000, c, getById(pgs)))))
    }
    lines.push(row('API process RSS at idle (embedded vs postgres)', idle, 'MB'))
    return lines
  } finally {
    proc.kill('SIGTERM')
    await new Promise(resolve => proc.once('exit', resolve))
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
