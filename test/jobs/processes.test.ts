import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { TEST_DATABASE_URL, TEST_JWT_SECRET } from '../support/env.js'
import { adminQuery, freePort } from '../support/local.js'

// The three entry points as an operator runs them: real processes (node --import tsx), a database
// of their own (created and dropped here), real signals. Every wait is bounded.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const TABLES = ['object_types', 'object_type_versions', 'audit_events', 'knex_migrations', 'releases']

interface Proc {
  child: ChildProcess
  output: () => string
  /** Resolves when `test` matches the output so far; rejects on exit or after `ms`. */
  waitFor: (test: RegExp, ms: number) => Promise<void>
  /** Resolves with the exit code (null when killed by a signal); kills the process after `ms`. */
  exited: (ms: number) => Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

/** A clean environment: only PATH and what the test passes (never the runner's NODE_TEST_* variables). */
function start (entry: string, env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout!.on('data', d => { out += String(d) })
  child.stderr!.on('data', d => { out += String(d) })
  const exit = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  return {
    child,
    output: () => out,
    waitFor (test, ms) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => { cleanup(); reject(new Error(`timed out waiting for ${test}; output:\n${out}`)) }, ms)
        const check = () => { if (test.test(out)) { cleanup(); resolve() } }
        const onExit = () => { cleanup(); reject(new Error(`${entry} exited before ${test}; output:\n${out}`)) }
        const cleanup = () => { clearTimeout(timer); child.stdout!.off('data', check); child.off('exit', onExit) }
        child.stdout!.on('data', check)
        child.once('exit', onExit)
        check()
      })
    },
    async exited (ms) {
      const timer = setTimeout(() => child.kill('SIGKILL'), ms)
      const [code, signal] = await exit
      clearTimeout(timer)
      return { code, signal }
    }
  }
}

async function rowCounts (url: string): Promise<Record<string, number>> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    const out: Record<string, number> = {}
    for (const t of TABLES) out[t] = Number((await c.query(`SELECT count(*) AS n FROM ${t}`)).rows[0].n)
    return out
  } finally {
    await c.end()
  }
}

describe('entry points refuse a bad configuration with one line naming the variable', () => {
  const good = { DATABASE_URL: TEST_DATABASE_URL, AUTH_JWT_SECRET: TEST_JWT_SECRET }
  const cases: Array<[string, Record<string, string>, string]> = [
    ['server/main.ts', { ...good, AUTH_JWT_SECRET: 'too-short' }, 'AUTH_JWT_SECRET'],
    ['server/main.ts', { ...good, DATABASE_URL: 'mysql://127.0.0.1/spatial' }, 'DATABASE_URL'],
    ['worker/main.ts', { AUTH_JWT_SECRET: TEST_JWT_SECRET }, 'DATABASE_URL'],
    ['server/main.ts', { ...good, RATE_LIMIT_LIMIT: 'lots' }, 'RATE_LIMIT_LIMIT'],
    ['server/main.ts', { ...good, LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    ['server/main.ts', { AUTH_JWT_SECRET: TEST_JWT_SECRET }, 'DATABASE_URL'],
    ['embedded/main.ts', { ...good }, 'DATABASE_URL'],
    ['worker/main.ts', { ...good, REDIS_URL: 'http://127.0.0.1:6379' }, 'REDIS_URL'],
    ['db/setup.ts', { ...good, AUTH_DISABLED: 'perhaps' }, 'AUTH_DISABLED']
  ]
  for (const [entry, env, variable] of cases) {
    it(`${entry} with bad ${variable}`, { timeout: 20_000 }, async () => {
      const p = start(entry, env)
      const { code } = await p.exited(15_000)
      assert.notEqual(code, 0)
      assert.notEqual(code, null, 'it exits by itself')
      const lines = p.output().split('\n').filter(l => l.trim() !== '')
      assert.equal(lines.length, 1, `exactly one line, got:\n${p.output()}`)
      assert.match(lines[0], new RegExp(`\\b${variable}\\b`))
    })
  }
})

describe('setup job, API and worker on a fresh database', { timeout: 120_000 }, () => {
  const name = `spatial_test_platform_proc_${randomBytes(4).toString('hex')}`
  const url = Object.assign(new URL(TEST_DATABASE_URL), { pathname: `/${name}` }).toString()
  const env = { DATABASE_URL: url, AUTH_JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'info' }
  const running: Proc[] = []

  before(() => adminQuery(`CREATE DATABASE "${name}"`))
  after(async () => {
    for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
    await adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
  })

  let firstCounts: Record<string, number>

  it('db/setup.ts migrates, seeds and records the release, then exits 0', { timeout: 60_000 }, async () => {
    const p = start('db/setup.ts', env)
    const { code } = await p.exited(50_000)
    assert.equal(code, 0, p.output())
    assert.match(p.output(), /release recorded/)
    firstCounts = await rowCounts(url)
    assert.ok(firstCounts.knex_migrations >= 2, JSON.stringify(firstCounts))
    assert.ok(firstCounts.object_types >= 1, 'the demo type is seeded')
    assert.ok(firstCounts.object_type_versions >= 1)
    assert.ok(firstCounts.audit_events >= 1, 'the seed is audited')
    assert.equal(firstCounts.releases, 1)
  })

  it('db/setup.ts run again changes nothing', { timeout: 60_000 }, async () => {
    assert.ok(firstCounts, 'the first run happened')
    const p = start('db/setup.ts', env)
    const { code } = await p.exited(50_000)
    assert.equal(code, 0, p.output())
    assert.deepEqual(await rowCounts(url), firstCounts)
  })

  it('server/main.ts answers /v1/health/ready 200 and exits 0 on SIGTERM', { timeout: 90_000 }, async () => {
    const port = await freePort()
    const p = start('server/main.ts', { ...env, PORT: String(port) })
    running.push(p)
    await p.waitFor(/api listening/, 50_000)
    const res = await fetch(`http://127.0.0.1:${port}/v1/health/ready`)
    const body = await res.json() as { status: string, checks: Record<string, string> }
    assert.equal(res.status, 200, JSON.stringify(body))
    assert.equal(body.status, 'ok')
    assert.equal(body.checks.database, 'ok')
    assert.equal(body.checks.release, 'ok')
    p.child.kill('SIGTERM')
    const { code, signal } = await p.exited(20_000)
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, p.output())
    assert.match(p.output(), /shutting down/)
  })

  it('worker/main.ts starts pg-boss and exits 0 on SIGTERM', { timeout: 90_000 }, async () => {
    const p = start('worker/main.ts', env)
    running.push(p)
    await p.waitFor(/worker started/, 50_000)
    p.child.kill('SIGTERM')
    const { code, signal } = await p.exited(25_000)
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, p.output())
    assert.match(p.output(), /shutting down/)
  })
})
