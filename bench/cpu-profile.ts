import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'

// Where a process's CPU went, from the profile `node --cpu-prof` writes when it exits: self time
// by package (node_modules/<name>), by node's own module (node:_http_client, node:net...), by our
// folder (dist/lib/automation...), or by V8 itself (builtins such as JSON.parse, the garbage
// collector, "(program)": native code with no JavaScript frame, compilation among it).
// Sampling is by wall clock: on a busy machine a frame that waits for a core (a socket write
// that wakes the database) collects samples it did not spend on the CPU.

interface ProfileNode { id: number, callFrame: { functionName: string, url: string } }
interface Profile { nodes: ProfileNode[], startTime: number, samples: number[], timeDeltas: number[] }

function category (frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame
  if (url === '') return functionName.startsWith('(') ? functionName : `V8 builtin ${functionName}`
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//)
  if (pkg !== null) return pkg[1]
  if (url.startsWith('node:')) return `node:${url.slice(5).replace(/^internal\//, '').split('/')[0]}`
  const ours = url.match(/\/dist\/(.+)\/[^/]+\.js$/)
  return ours === null ? url : `ours: ${ours[1].split('/').slice(0, 2).join('/')}`
}

/**
 * The one .cpuprofile in `dir`: the share of each category among the samples taken inside
 * `windows` (process.hrtime.bigint() pairs: V8 stamps samples with the same monotonic clock),
 * idle left out, largest first. Samples, not their time deltas: a sample's delta also holds any
 * time the process was stopped or waiting for a core, which a busy machine makes long.
 */
export async function profileShares (dir: string, windows: Array<[bigint, bigint]>): Promise<Array<{ category: string, share: number }>> {
  const file = (await readdir(dir)).find(f => f.endsWith('.cpuprofile'))
  if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`)
  const profile = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as Profile
  const byId = new Map(profile.nodes.map(n => [n.id, category(n.callFrame)]))
  const us = windows.map(([a, b]) => [Number(a / 1000n), Number(b / 1000n)])
  const counts = new Map<string, number>()
  let t = profile.startTime
  let all = 0
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i]
    const c = byId.get(id) ?? '?'
    if (c === '(idle)' || !us.some(([a, b]) => t >= a && t < b)) return
    counts.set(c, (counts.get(c) ?? 0) + 1)
    all++
  })
  return [...counts].map(([category, n]) => ({ category, share: n / all })).sort((a, b) => b.share - a.share)
}
