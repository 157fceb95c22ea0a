// Summarises /work/wt/ab-logs/{old,new}-<i>.log (written by /work/wt/ab-run.sh): per core path the
// median over runs of ours and raw ops/s for each version, new/old, the ratios ours/raw, and the
// API's CPU ms per operation; then the load average each run saw.
//   node /work/wt/ab-summary.mjs [logdir]
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const dir = process.argv[2] ?? '/work/wt/ab-logs'
const runs = { old: [], new: [] }
for (const name of readdirSync(dir).sort()) {
  const m = /^(old|new)-(\d+)\.log$/.exec(name)
  if (m === null) continue
  const text = readFileSync(join(dir, name), 'utf8')
  const line = text.split('\n').find(l => l.startsWith('AB-FIGURES '))
  const field = key => (text.split('\n').find(l => l.startsWith(key + ' ')) ?? '').slice(key.length + 1)
  runs[m[1]].push({
    name, text, figures: line === undefined ? null : JSON.parse(line.slice('AB-FIGURES '.length)),
    before: field('AB-LOAD-BEFORE'), after: field('AB-LOAD-AFTER'), end: field('AB-END'), start: field('AB-START')
  })
}

const median = xs => {
  const s = xs.filter(x => x !== null && Number.isFinite(x)).sort((a, b) => a - b)
  if (s.length === 0) return null
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const paths = []
for (const r of [...runs.old, ...runs.new]) for (const f of r.figures ?? []) if (!paths.includes(f.path)) paths.push(f.path)
const stat = (version, path, key) => median(runs[version].map(r => r.figures?.find(f => f.path === path)?.[key] ?? null))
const fmt = (x, d = 0) => x === null ? '-' : x.toFixed(d)
const div = (a, b) => a === null || b === null || b === 0 ? null : a / b

const ok = v => runs[v].filter(r => r.figures !== null).length
console.log(`core A/B: old = d03e356 + main's bench (adapted), new = main + main's bench; medians over runs (old ${ok('old')}/${runs.old.length}, new ${ok('new')}/${runs.new.length} runs with figures)`)
console.log('ops/s higher is better; "ours/raw" is the in-run ratio (drift hits both sides); CPU = API process ms per op (ours side)')
console.log('')
console.log('| path | old ours | new ours | new/old | old raw | new raw | new/old raw | old ours/raw | new ours/raw | old CPU ms/op | new CPU ms/op |')
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
for (const p of paths) {
  const oo = stat('old', p, 'ours'); const no = stat('new', p, 'ours')
  const or = stat('old', p, 'raw'); const nr = stat('new', p, 'raw')
  const d = p.includes('batches/s') ? 2 : 0
  console.log(`| ${p} | ${fmt(oo, d)} | ${fmt(no, d)} | ${fmt(div(no, oo), 2)} | ${fmt(or, d)} | ${fmt(nr, d)} | ${fmt(div(nr, or), 2)} | ${fmt(stat('old', p, 'ratio'), 2)} | ${fmt(stat('new', p, 'ratio'), 2)} | ${fmt(stat('old', p, 'apiCpuMsPerOp'), 2)} | ${fmt(stat('new', p, 'apiCpuMsPerOp'), 2)} |`)
}
console.log('')
console.log('load average (1, 5, 15 min) per run:')
for (const r of [...runs.old, ...runs.new].sort((a, b) => a.start.localeCompare(b.start))) {
  console.log(`  ${r.name.padEnd(10)} ${r.start}  before ${r.before}  after ${r.after}  ${r.end}${r.figures === null ? '  (no figures: see the log)' : ''}`)
  for (const l of r.text.split('\n').filter(l => l.startsWith('AB-LONG') || l.startsWith('AB-CANCEL'))) console.log(`    ${l}`)
}
