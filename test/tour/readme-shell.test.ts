import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { startService, type Service } from '../support/service.js'
import { freePort } from '../support/local.js'

// README's tour, run as a newcomer runs it: its ```sh blocks, in order, in bash, with curl and
// jq, against the service as `npm start` starts it (the address, the receiver's port and the
// checkout npm runs the token command in are the only things changed; it runs in a folder of its
// own, where it leaves its files). Twice in a row on the same service: the tour must not depend on a fresh
// database (fixed keys or slugs would answer 409 the second time).

const MODE = process.env.TOUR_MODE === 'embedded' ? 'embedded' : 'postgres'
const README = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

/** The tour section's shell blocks, joined into one script. */
function tourScript (): string {
  const start = README.indexOf('\n## A short tour with curl\n')
  const end = README.indexOf('\n## ', start + 10)
  assert.ok(start !== -1 && end !== -1, 'README has its tour')
  const blocks = [...README.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map(m => m[1])
  assert.ok(blocks.length >= 10, 'the tour has its blocks')
  return blocks.join('\n')
}

function run (script: string, env: Record<string, string>, cwd: string): Promise<{ code: number | null, out: string }> {
  return new Promise(resolve => {
    const p = spawn('bash', ['-c', script], { env, cwd })
    let out = ''
    p.stdout.on('data', d => { out += String(d) })
    p.stderr.on('data', d => { out += String(d) })
    p.on('exit', code => resolve({ code, out }))
  })
}

describe(`README tour as written, in bash (${MODE} mode)`, { timeout: 1_200_000 }, () => {
  let svc: Service
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tour-shell-'))
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tour-work-'))
  before(async () => { svc = await startService(MODE, { dataDir }) })
  after(async () => {
    await svc?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
    fs.rmSync(work, { recursive: true, force: true })
  })

  it('runs to its end twice, answering what it says it answers', async () => {
    const receiverPort = await freePort()
    const host = new URL(svc.base).host
    // Stop on the first failing command; the receiver the tour starts in the background stops with it.
    const script = 'set -eo pipefail\ntrap \'kill $(jobs -p) 2>/dev/null || true\' EXIT\n' +
      tourScript().replaceAll('localhost:3000', host).replaceAll('9999', String(receiverPort))
        .replaceAll('npm run ', `npm --prefix ${path.resolve('.')} run `).replaceAll('node_modules/.bin/node', path.resolve('node_modules/.bin/node'))
    const env = { ...process.env, ...svc.env, PATH: `${path.resolve('node_modules/.bin')}:${process.env.PATH}` } as Record<string, string>
    for (const round of [1, 2]) {
      const { code, out } = await run(script, env, work)
      const where = `round ${round}:\n${out.slice(-3000)}`
      assert.equal(code, 0, where)
      // What the tour shows on purpose: a refused object, two version conflicts.
      assert.match(out, /"code":"VALIDATION_ERROR"/, where)
      assert.match(out, /"code":"VERSION_CONFLICT"/, where)
      // What it must never meet: a clash with an earlier run, a refusal it does not explain, a failure.
      for (const code of ['CONFLICT', 'NOT_FOUND', 'UNAUTHORIZED', 'FORBIDDEN', 'INTERNAL_ERROR', 'BAD_REQUEST']) {
        assert.doesNotMatch(out, new RegExp(`"code": ?"${code}"`), `${code} in ${where}`)
      }
      assert.match(out, /"valid": ?true/, `the audit proof, ${where}`)
      assert.match(out, /"firstRootHash"/, `the consistency proof, ${where}`)
      assert.match(out, /"replayOf"/, `the replayed run, ${where}`)
      // The failed run's two attempts, which the tour says come 1 s apart (docs/behaviour.md "Automation").
      const at = [...out.matchAll(/"at": "([^"]+)"/g)].map(m => Date.parse(m[1])).slice(-2)
      assert.equal(at.length, 2, where)
      const gap = (at[1] - at[0]) / 1000
      assert.ok(gap >= 1 && gap < 1.8, `the retry came ${gap} s after the first attempt`)
    }
    assert.ok(fs.existsSync(path.join(work, 'tile.mvt')) && fs.existsSync(path.join(work, 'head.json')), 'the tour wrote its files where it ran')
  })
})
