import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { PgBoss } from 'pg-boss'
import { newTenant, startServer, token, type TestServer } from '../support/harness.js'
import { TEST_DATABASE_URL, TEST_JWT_SECRET } from '../support/env.js'
import { inDays, newIssuer, type Issuer } from '../support/license.js'
import { freePort } from '../support/local.js'

// A license installed through one process is in force in a separately started API process at
// once, without a restart (the NOTIFY of lib/settings). Every wait is bounded.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const SECRET = 'storage-secret-for-tests-0123456789abcdef'

describe('a license installed in one process', () => {
  let issuer: Issuer
  let local: TestServer
  let child: ChildProcess
  let base: string
  before(async () => {
    issuer = newIssuer()
    const env = { LICENSE_PUBLIC_KEY: issuer.publicKey, LICENSE_STORAGE_SECRET: SECRET }
    local = await startServer(env)
    // The API starts pg-boss without migrating: install its schema here (what the setup job does).
    const boss = new PgBoss({ connectionString: TEST_DATABASE_URL, schema: 'pgboss' })
    boss.on('error', () => {})
    await boss.start()
    await boss.stop({ graceful: false })
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: TEST_DATABASE_URL, AUTH_JWT_SECRET: TEST_JWT_SECRET, PORT: String(port), LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let out = ''
    child.stderr!.on('data', d => { out += String(d) })
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`API did not start: ${out}`)), 60_000)
      child.stdout!.on('data', d => { out += String(d); if (out.includes('api listening')) { clearTimeout(timer); resolve() } })
      child.once('exit', () => { clearTimeout(timer); reject(new Error(`API exited: ${out}`)) })
      child.stderr!.on('data', () => { if (/startup failed|configuration error/.test(out)) child.kill('SIGKILL') })
    })
  })
  after(async () => {
    child.kill('SIGTERM')
    await once(child, 'exit')
    await local.close()
  })

  it('is in force in another API process at once', async () => {
    const tenant = newTenant('proc')
    const auth = { Authorization: `Bearer ${token({ tenant, roles: ['owner'] })}` }
    const remote = async () => (await (await fetch(`${base}/v1/license`, { headers: auth })).json()) as { source: string, edition: string }
    assert.equal((await remote()).source, 'none')
    const res = await local.as(tenant, ['owner']).post('/v1/license', { licenseKey: issuer.sign({ tenant, edition: 'pro', exp: inDays(30) }) })
    assert.equal(res.status, 200)
    const end = Date.now() + 10_000
    let seen = await remote()
    while (seen.source !== 'installed' && Date.now() < end) seen = await remote()
    assert.deepEqual([seen.source, seen.edition], ['installed', 'pro'])
  })
})
