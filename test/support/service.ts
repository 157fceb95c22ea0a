import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { TEST_DATABASE_URL, TEST_JWT_SECRET } from './env.js'
import { freePort } from './local.js'

// The service as its entry points run it, in child processes: `embedded/main.ts` alone in
// embedded mode (DATA_DIR), or `server/main.ts` + `worker/main.ts` on TEST_DATABASE_URL.

export type Mode = 'embedded' | 'postgres'

export interface Service {
  base: string
  /** The environment the processes run with (for the token command: the same secret). */
  env: Record<string, string>
  /** The processes' output (JSON log lines and the banner). */
  logFile: string
  stop (): Promise<void>
}

function baseEnv (): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !['DATABASE_URL', 'AUTH_JWT_SECRET', 'DATA_DIR', 'PORT', 'REDIS_URL'].includes(k)) env[k] = v
  }
  return env
}

export async function startService (mode: Mode, opts: { dataDir: string, env?: Record<string, string>, readyTimeoutMs?: number }): Promise<Service> {
  const port = await freePort()
  const common = { PORT: String(port), RATE_LIMIT_LIMIT: '1000000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'warn', ...opts.env }
  const env: Record<string, string> = mode === 'embedded'
    ? { ...baseEnv(), ...common, DATA_DIR: opts.dataDir }
    : { ...baseEnv(), ...common, DATABASE_URL: TEST_DATABASE_URL, AUTH_JWT_SECRET: TEST_JWT_SECRET }
  const logFile = `${opts.dataDir.replace(/\/$/, '')}.log`
  const out = fs.openSync(logFile, 'a')
  const run = (entry: string): ChildProcess => spawn(process.execPath, ['--import', 'tsx', entry], { env, stdio: ['ignore', out, out], cwd: path.resolve(import.meta.dirname, '../..') })
  const procs = mode === 'embedded' ? [run('embedded/main.ts')] : [run('server/main.ts'), run('worker/main.ts')]
  const base = `http://127.0.0.1:${port}`
  const stop = async () => {
    await Promise.all(procs.map(p => new Promise<void>(resolve => {
      if (p.exitCode !== null || p.signalCode !== null) return resolve()
      p.once('exit', () => resolve())
      p.kill('SIGTERM')
    })))
    fs.closeSync(out)
  }
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 900_000)
  for (;;) {
    const exited = procs.find(p => p.exitCode !== null)
    if (exited !== undefined) {
      await stop()
      throw new Error(`the ${mode} service exited with ${exited.exitCode}:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`)
    }
    const ready = await fetch(`${base}/v1/health/ready`).then(r => r.status === 200, () => false)
    if (ready) break
    if (Date.now() > deadline) { await stop(); throw new Error(`the ${mode} service was not ready in time:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`) }
    await new Promise(resolve => setTimeout(resolve, 500))
  }
  return { base, env, logFile, stop }
}
