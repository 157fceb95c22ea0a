#!/usr/bin/env python3
"""Applies the A/B harness's additions to a copy of main's bench/ (used by /work/wt/ab-sync.sh).

  ab-patch.py <worktree>          # AB-FIGURES output and API CPU per op (both versions)
  ab-patch.py --old <worktree>    # the same, plus the adaptations to the pre-key-change code (d03e356)

Every replacement asserts its anchor, so a bench that moved on fails loudly here, not in a run.
"""
import re
import sys

args = sys.argv[1:]
old = '--old' in args
root = [a for a in args if a != '--old'][0]


def edit(path, fn):
    p = f'{root}/bench/{path}'
    s = open(p).read()
    t = fn(s)
    open(p, 'w').write(t)


def sub(s, a, b, required=True):
    if a not in s:
        if required:
            sys.exit(f'ab-patch: anchor not found: {a[:80]!r}')
        return s
    return s.replace(a, b, 1)


# Both versions: API CPU per op around the `ours` side of measure(), and the figures as JSON.
def core(s):
    s = sub(s, "import { randomUUID } from 'node:crypto'\n", "import { randomUUID } from 'node:crypto'\nimport { readFileSync } from 'node:fs'\n")
    s = sub(s, "export async function benchCore (", """/** ab: the API process's user+system CPU in ms (from /proc), 0 when AB_API_PID is unset. */
function abCpuMs (): number {
  const pid = process.env.AB_API_PID
  if (pid === undefined) return 0
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ') // fields from 3 (state): utime is 14, stime 15
  return (Number(f[11]) + Number(f[12])) * 1000 / 100 // clock ticks (CLK_TCK 100) to ms
}
/** ab: API CPU ms per operation by path (ours side only). */
export const abCpu = new Map<string, number>()

export async function benchCore (""")
    s = sub(s, "    const r = await compare(env.rounds, () => throughput(n, c, async i => { await ours(i) }), () => throughput(n, c, async i => { await raw(i) }))\n",
            """    // ab: the API process's CPU time over the timed `ours` rounds (AB_API_PID, set by run.ts), per operation.
    let apiCpuMs = 0
    const timedOurs = async () => { const t0 = abCpuMs(); const rate = await throughput(n, c, async i => { await ours(i) }); apiCpuMs += abCpuMs() - t0; return rate }
    const r = await compare(env.rounds, timedOurs, () => throughput(n, c, async i => { await raw(i) }))
""")
    s = sub(s, "    figures.push({ path, raw: r.baseline, ours: r.candidate, ratio: r.ratio, goal })\n",
            "    figures.push({ path, raw: r.baseline, ours: r.candidate, ratio: r.ratio, goal })\n    abCpu.set(path, apiCpuMs / (n * env.rounds))\n")
    if old:
        # object_types is keyed by id alone before the key change: no row of the type per tenant.
        s = re.sub(r"    await pool\.query\(`INSERT INTO object_types \(id, tenant_id, key, latest_version, published_version\)\n.*?\n", 
                   "    // ab-old: object_types is keyed by id alone here; the raw tenant's objects reference the city's type row.\n", s, count=1)
    return s


def run(s):
    s = sub(s, "import { benchCore, table } from './core.js'", "import { abCpu, benchCore, table } from './core.js'")
    s = sub(s, """    const core = await benchCore(ctx, line => console.log(line))
    for (const line of table(core.figures)) console.log(line)
""", """    process.env.AB_API_PID = String(api.pid)
    const core = await benchCore(ctx, line => console.log(line))
    for (const line of table(core.figures)) console.log(line)
    // ab: the figures unrounded, with the API's CPU ms per operation, for /work/wt/ab-summary.mjs.
    console.log('AB-FIGURES ' + JSON.stringify(core.figures.map(f => ({ ...f, apiCpuMsPerOp: abCpu.get(f.path) ?? null }))))
""")
    if old:
        # The other sections import lib of the new code: load them only when asked for.
        for m in re.findall(r"^import \{ (bench\w+) \} from '\./(\w+)\.js'\n", s, flags=re.M):
            name, mod = m
            s = s.replace(f"import {{ {name} }} from './{mod}.js'\n", '')
            s = s.replace(f"await {name}(", f"await (await import('./{mod}.js')).{name}(")
        s = s.replace(', audit_tree_nodes', '')  # no audit tree before the key change
    return s


def support(s):
    if old:
        s = sub(s, 'counters.vacuum(db)', "db.raw('VACUUM (SKIP_LOCKED) counter_deltas')", required=False)
    return s


edit('core.ts', core)
edit('run.ts', run)
edit('support.ts', support)
print(f'ab-patch: {root}/bench patched' + (' (old)' if old else ''))
