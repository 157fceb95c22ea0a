import type { ChildProcess } from 'node:child_process'
import { addUsage, benchTenant, freePort, http, httpText, markdownTable, median, meter, noUsage, servicePid, startService, throughput, waitReady, type Usage } from './support.js'
import type { FleetBenchEnv } from './fleet.js'

// The API as pods (issue 36, point 4): two web processes, each under a CPU limit, the client
// spreading its requests over them in turn, against one of them alone, in rounds of alternating
// order; gets by id and creates, one tenant. The database is left the rest of the machine. The
// load grows with the pods, as a fleet's does when it is scaled out: BENCH_FLEET_API_CLIENTS
// clients per web process (with a fixed number, each of two pods would get half the requests in
// flight one pod had, and be measured at a lighter load, not at its capacity). Each client keeps
// to one web process, as a keep-alive connection through a Kubernetes Service keeps to one pod:
// handing requests out in turn, every client would soon wait on whichever pod its quota had
// stopped, and the other would idle.

const MILLICORES = Number(process.env.BENCH_FLEET_API_MILLICORES ?? 150)
// A round lasts seconds, tens of the quota's 100 ms periods: over one second, a pod stopped by its
// quota as the round ends (or one that starts it with a period's quota unspent) moved the ratio.
const REQUESTS = Number(process.env.BENCH_FLEET_REQUESTS ?? 12000)
const WARM_REQUESTS = Number(process.env.BENCH_FLEET_API_WARMUP ?? 2000)
const CLIENTS_PER_WEB = Number(process.env.BENCH_FLEET_API_CLIENTS ?? 16)
const GOAL = 1.8

interface Web { child: ChildProcess, pid: number, baseUrl: string }
type Op = (baseUrl: string, i: number) => Promise<unknown>
interface Side { n: number, rates: number[], usage: Usage }

async function startWeb (env: FleetBenchEnv['env']): Promise<Web> {
  const port = await freePort()
  const options = { millicores: MILLICORES }
  const child = startService('server/main', { ...env, PORT: String(port) }, undefined, options)
  const baseUrl = `http://127.0.0.1:${port}`
  await waitReady(baseUrl)
  return { child, pid: await servicePid(child, options), baseUrl }
}

async function stopWeb (web: Web): Promise<void> {
  const exited = new Promise(resolve => web.child.once('exit', resolve))
  web.child.kill('SIGTERM')
  await exited
}

/** `count` requests a web process, from CLIENTS_PER_WEB clients a web process (each keeping to one); requests/s. */
async function run (env: FleetBenchEnv, webs: Web[], side: Side, op: Op, count: number, timed: boolean): Promise<void> {
  const use = webs.slice(0, side.n)
  const end = await meter(env.db, use.map(w => w.pid), use.map(w => w.child))
  const rate = await throughput(count * use.length, CLIENTS_PER_WEB * use.length, async (i, client) => { await op(use[client % use.length].baseUrl, i) })
  const usage = await end()
  if (!timed) return
  side.rates.push(rate)
  addUsage(side.usage, usage)
}

function line (path: string, sides: Side[]): string[] {
  const [one, two] = sides.map(s => median(s.rates))
  const ratio = two / one
  const each = (f: (s: Side) => string) => sides.map(f).join(' / ')
  const ms = (s: Side, seconds: number) => `${(seconds / (REQUESTS * s.n * s.rates.length) * 1000).toFixed(2)}`
  return [path, one.toFixed(0), two.toFixed(0), ratio.toFixed(2), `>= ${GOAL}${ratio >= GOAL ? '' : ' (missed)'}`,
    each(s => `${ms(s, s.usage.processes)} (${ms(s, s.usage.kernel)})`), each(s => (s.usage.preempted / (REQUESTS * s.n * s.rates.length)).toFixed(3)), each(s => ms(s, s.usage.database)),
    each(s => `${(100 * s.usage.idle / s.usage.ticks).toFixed(0)} %`), each(s => `${(100 * s.usage.throttled / Math.max(1, s.usage.periods)).toFixed(0)} %`)]
}

export async function benchFleetApi (env: FleetBenchEnv, print: (line: string) => void): Promise<void> {
  const tenant = benchTenant('fleet-api')
  const token = env.tokenFor(tenant)
  const type = await http(env, token, 'POST', '/v1/object-types', { key: 'probe', name: 'Probe', attributeSchema: { type: 'object', properties: { n: { type: 'number' } } } })
  await http(env, token, 'POST', `/v1/object-types/${type.id}/publish`, { to: 'published' })
  const ids: string[] = []
  for (let i = 0; i < 100; i++) ids.push((await http(env, token, 'POST', '/v1/objects', { typeId: type.id, attributes: { n: i } })).id)
  const ops: Array<[string, Op]> = [
    ['get by id', (baseUrl, i) => httpText({ baseUrl }, token, 'GET', `/v1/objects/${ids[i % ids.length]}`)],
    ['create', (baseUrl, i) => httpText({ baseUrl }, token, 'POST', '/v1/objects', { typeId: type.id, attributes: { n: i } })]
  ]
  const webs = [await startWeb(env.env), await startWeb(env.env)]
  const rows: string[][] = []
  try {
    for (const [path, op] of ops) {
      const sides: Side[] = [1, 2].map(n => ({ n, rates: [], usage: noUsage() }))
      for (const side of sides) await run(env, webs, side, op, WARM_REQUESTS, false)
      for (let r = 0; r < env.rounds; r++) {
        for (const side of r % 2 === 0 ? sides : [...sides].reverse()) await run(env, webs, side, op, REQUESTS, true)
      }
      rows.push(line(path, sides))
    }
  } finally {
    await Promise.all(webs.map(stopWeb))
  }
  print(`fleet, API: web processes of ${MILLICORES}m each, ${REQUESTS} requests a round and ${CLIENTS_PER_WEB} clients, both per web process, each client keeping to one, medians of ${env.rounds} rounds; CPU in ms per request, 1 / 2 web processes`)
  for (const l of markdownTable(['path', `1 web, req/s`, `2 web, req/s`, '2 / 1', 'goal', 'API CPU ms (in the kernel)', 'API preempted per request', 'database CPU ms', 'machine idle', 'periods throttled'], rows)) print(l)
}
