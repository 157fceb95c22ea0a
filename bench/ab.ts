import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { median } from './support.js'

// `npm run bench:ab -- <git ref>`: the bench sections (BENCH_ONLY, default core,layers,automation)
// against two builds of the service in one run: the build of <ref> (a worktree in .bench-ab/,
// installed and built once) and this checkout's, in alternating whole runs (before, after,
// before, after, ... BENCH_AB_RUNS of each, default 2) of this checkout's bench code. Every ratio
// the sections print (ours / the best raw SQL of the same run) is collected per build; the table
// gives the median of each build's ratios and after / before.

const root = new URL('..', import.meta.url).pathname
const ref = process.argv[2]
if (ref === undefined) { process.stderr.write('usage: npm run bench:ab -- <git ref of the build to compare against>\n'); process.exit(2) }
const runs = Number(process.env.BENCH_AB_RUNS ?? 2)
const sha = execFileSync('git', ['-C', root, 'rev-parse', '--short', ref], { encoding: 'utf8' }).trim()
const before = path.join(root, '.bench-ab', sha)

if (!existsSync(path.join(before, 'dist'))) {
  if (!existsSync(before)) execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', before, sha], { stdio: 'inherit' })
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: before, stdio: 'inherit' })
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: before, stdio: 'inherit' })
}

const sides = [{ name: `before (${sha})`, dir: before }, { name: 'after (this checkout)', dir: root }]
const figures = new Map<string, Array<Map<string, number[]>>>() // label -> per side -> ratios
const dir = path.join(root, '.bench-ab', 'figures')
mkdirSync(dir, { recursive: true })

function runBench (side: number, i: number): Promise<void> {
  const file = path.join(dir, `${side}-${i}.jsonl`)
  rmSync(file, { force: true })
  const env = { ...process.env, BENCH_SERVICE_DIR: sides[side].dir, BENCH_FIGURES_FILE: file, BENCH_ONLY: process.env.BENCH_ONLY ?? 'core,layers,automation', BENCH_LAYERS_MILLION: process.env.BENCH_LAYERS_MILLION ?? '0', BENCH_MILLION: process.env.BENCH_MILLION ?? '0' }
  process.stdout.write(`\n== ${sides[side].name}, run ${i + 1} of ${runs}\n`)
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench/run.ts')], { env, stdio: 'inherit', cwd: root })
    p.on('exit', code => {
      if (code !== 0) { reject(new Error(`the bench exited ${code}`)); return }
      for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
        const f = JSON.parse(line) as { label: string, ratio: number }
        let per = figures.get(f.label)
        if (per === undefined) figures.set(f.label, per = [new Map(), new Map()])
        const key = 'ratio'
        per[side].set(key, [...(per[side].get(key) ?? []), f.ratio])
      }
      resolve()
    })
  })
}

for (let i = 0; i < runs; i++) {
  // Alternate which build goes first, so neither always runs on the fresher machine.
  const order = i % 2 === 0 ? [0, 1] : [1, 0]
  for (const side of order) await runBench(side, i)
}

process.stdout.write(`\nbench:ab: median ratio (ours / raw SQL) per build over ${runs} run(s) each, and after / before\n`)
process.stdout.write(`${'figure'.padEnd(60)} ${'before'.padStart(7)} ${'after'.padStart(7)} ${'after/before'.padStart(13)}\n`)
for (const [label, per] of figures) {
  const b = per[0].get('ratio') ?? []
  const a = per[1].get('ratio') ?? []
  if (b.length === 0 || a.length === 0) continue
  const mb = median(b)
  const ma = median(a)
  process.stdout.write(`${label.slice(0, 60).padEnd(60)} ${mb.toFixed(2).padStart(7)} ${ma.toFixed(2).padStart(7)} ${(ma / mb).toFixed(2).padStart(13)}  (before ${b.map(x => x.toFixed(2)).join(' ')}; after ${a.map(x => x.toFixed(2)).join(' ')})\n`)
}
