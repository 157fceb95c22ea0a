import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { loadConfig } from '../../lib/config.js'
import { QUEUES } from '../../lib/queues/index.js'

// README is the newcomer's way in: it must say how to run the tests, keep its tour, and list the
// configuration and the queues the code has. (On 2026-11-23 a rewrite of README dropped its test
// command, configuration and tour, and nothing failed for three days.)

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

/** The body of the `## title` section, up to the next `## ` heading (code blocks hold `# ` comment lines). */
function section (title: string): string {
  const start = README.indexOf(`\n## ${title}\n`)
  assert.notEqual(start, -1, `README has no "## ${title}" section`)
  const rest = README.slice(start + title.length + 5)
  const end = rest.search(/\n## /)
  return end === -1 ? rest : rest.slice(0, end)
}

/** Every environment variable loadConfig reads, seen through a recording env object. */
function variablesRead (): Set<string> {
  const seen = new Set<string>()
  const record = (env: Record<string, string>) => new Proxy(env, { get: (t, k) => { if (typeof k === 'string') seen.add(k); return t[k as string] } })
  loadConfig(record({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/spatial', AUTH_JWT_SECRET: 'x'.repeat(32) }))
  loadConfig(record({ AUTH_DISABLED: 'true' }))
  return seen
}

describe('README', () => {
  it('gives the test command that .ci/run runs, and the tour its first section links to', () => {
    const test = section('Test it')
    assert.match(test, /bash \.ci\/run/)
    assert.match(test, /`npm test`/)
    assert.match(readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8'), /^npm test$/m)
    assert.match(README, /\(#a-short-tour-with-curl\)/)
    const tour = section('A short tour with curl')
    for (const step of ['/v1/object-types', '/v1/objects/batch', '/v1/workflows', '/v1/queries/objects/run', '/v1/layers/definitions', 'ogrinfo', 'OAPIF:', '/v1/audit/', '/v1/graphql', '/v1/automation/rules', '/v1/outbox/flush', '/replay']) {
      assert.ok(tour.includes(step), `the tour has no step with ${step}`)
    }
  })

  it('lists every variable the configuration reads, and no other', () => {
    const table = section('Configuration')
    const listed = new Set([...table.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map(m => m[1]))
    const read = variablesRead()
    assert.ok(read.size > 20, `the recording env saw only ${read.size} variables`)
    for (const name of read) assert.ok(listed.has(name), `${name} is read by lib/config.ts but missing from README's Configuration table`)
    for (const name of listed) assert.ok(read.has(name), `${name} is in README's Configuration table but lib/config.ts does not read it`)
    const rows = [...table.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map(m => m[1])
    assert.equal(rows.length, listed.size, 'a variable is listed twice')
  })

  it('names every queue of lib/queues/contracts.ts where it says what scales them (docs/operations.md "Scaling", linked from README)', () => {
    assert.ok(section('Running it for real (PostgreSQL)').includes('docs/operations.md#scaling'))
    const ops = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8')
    const scaling = ops.slice(ops.indexOf('\n## Scaling\n'), ops.indexOf('\n## ', ops.indexOf('\n## Scaling\n') + 1))
    for (const q of QUEUES) assert.ok(scaling.includes(`\`${q.name}\``), `queue ${q.name} is missing from the queue table of docs/operations.md "Scaling"`)
  })
})
