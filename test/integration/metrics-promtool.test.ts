import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { token } from '../support/harness.js'
import { scratchDatabase, startApi, startReceiver, startWorker, stopAllWorkers, waitUntil, type Receiver } from '../support/automation.js'

// What Prometheus and Grafana are given, checked by Prometheus's own tool: the /metrics of a real
// API and a real worker (`promtool check metrics`), the alerting rules (`check rules`) and their unit
// tests (`test rules`), and every query of the Grafana dashboard (as recording rules, `check rules`).
// Every metric the rules and the dashboard name must be one the processes export.

const ROOT = path.resolve(import.meta.dirname, '../..')
const RULES = path.join(ROOT, 'deploy/prometheus/rules.yml')
const RULE_TESTS = path.join(ROOT, 'deploy/prometheus/rules.test.yml')
const DASHBOARD = path.join(ROOT, 'deploy/grafana/dashboard.json')
const PROMTOOL = spawnSync('promtool', ['--version']).status === 0
const SKIP = PROMTOOL ? false : 'promtool is not installed (scripts/install.sh installs it: apt-get install prometheus)'

function promtool (args: string[], input?: string): { status: number | null, output: string } {
  const r = spawnSync('promtool', args, { input, encoding: 'utf8', cwd: ROOT })
  return { status: r.status, output: `${r.stdout}${r.stderr}` }
}

/** Every PromQL query of the dashboard, with Grafana's interval variables replaced by a duration. */
function dashboardQueries (): Array<{ panel: string, expr: string }> {
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ title: string, targets?: Array<{ expr: string }> }> }
  return dashboard.panels.flatMap(p => (p.targets ?? []).map(t => ({ panel: p.title, expr: t.expr.replace(/\$__(rate_)?interval|\$__range/g, '5m') })))
}

const KEYWORDS = new Set(['by', 'without', 'and', 'or', 'unless', 'offset', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'time'])

/** The metric names a query reads (label matchers, grouping labels, functions and strings left out). */
function metricsOf (expr: string): string[] {
  const bare = expr.replace(/"[^"]*"/g, '').replace(/\{[^}]*\}/g, '').replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '')
  return [...bare.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map(m => m[1]).filter(n => !KEYWORDS.has(n) && !/^\d/.test(n) && !/^\d+[smhdwy]$/.test(n))
}

/** The metric families of an exposition, with a histogram's _bucket, _sum and _count series. */
function familiesOf (text: string): Set<string> {
  const out = new Set<string>()
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    out.add(m[1])
    if (m[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(m[1] + s)
  }
  return out
}

describe('metrics, alerting rules and dashboard, as promtool reads them', { skip: SKIP, timeout: 300_000 }, () => {
  let database: Awaited<ReturnType<typeof scratchDatabase>>
  let receiver: Receiver
  let api: Awaited<ReturnType<typeof startApi>>
  let workerMetrics = ''

  before(async () => {
    database = await scratchDatabase()
    receiver = await startReceiver()
    api = await startApi({ DATABASE_URL: database.url })
    const worker = await startWorker({ DATABASE_URL: database.url, WORKER_METRICS_PORT: '0' })
    workerMetrics = `http://127.0.0.1:${JSON.parse(worker.output().split('\n').find(l => l.includes('worker metrics listening'))!).port}/metrics`
    // One webhook run end to end, so the worker's job and webhook series have samples.
    const bearer = token({ tenant: 'metrics-promtool', roles: ['owner'] })
    const call = (method: string, p: string, body: unknown, auth = bearer) => fetch(api.base + p, {
      method, headers: { Authorization: `Bearer ${auth}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body)
    }).then(async r => ({ status: r.status, body: await r.json() as any }))
    const rule = await call('POST', '/v1/automation/rules', { name: 'm', trigger: { type: 'webhook', slug: 'm' }, effect: { type: 'webhook', url: receiver.url } })
    assert.equal(rule.status, 201, JSON.stringify(rule.body))
    assert.equal((await call('POST', `/v1/automation/rules/${rule.body.id}/publish`, { to: 'active' })).status, 200)
    assert.equal((await call('POST', '/v1/automation/triggers/m', {}, rule.body.webhookToken)).status, 202)
    await waitUntil(() => receiver.received.length > 0, 60_000, 'the webhook delivery')
  })
  after(async () => {
    await stopAllWorkers()
    await receiver?.close()
    await database?.drop()
  })

  const scrape = async (url: string) => {
    const res = await fetch(url)
    assert.equal(res.status, 200)
    return res.text()
  }

  it('promtool check metrics accepts the API\'s and the worker\'s /metrics', async () => {
    for (const url of [`${api.base}/metrics`, workerMetrics]) {
      const r = promtool(['check', 'metrics'], await scrape(url))
      assert.equal(r.status, 0, `${url}:\n${r.output}`)
    }
  })

  it('exports the fleet figures on the API and the job, webhook and pool figures on the worker', async () => {
    const fleet = await scrape(`${api.base}/metrics`)
    for (const line of [/^service_ready 1$/m, /^job_queue_oldest_seconds\{queue="automation.run"\} \d/m, /^job_queue_failed\{queue="webhook.deliver"\} 0$/m,
      /^outbox_lag_seconds \d/m, /^outbox_pending_events \d/m, /^db_pool_connections\{state="in_use"\} \d/m, /^db_pool_waiting 0$/m]) assert.match(fleet, line)
    const worker = await waitUntil<string | null>(async () => {
      const text = await scrape(workerMetrics)
      return /^job_run_seconds_count\{queue="webhook.deliver"\} [1-9]/m.test(text) ? text : null
    }, 30_000, 'the delivery to be counted') as string
    assert.match(worker, /^webhook_attempts_total\{outcome="2xx"\} 1$/m)
    assert.match(worker, /^job_run_seconds_count\{queue="automation.run"\} [1-9]/m)
    assert.match(worker, /^service_ready 1$/m)
    assert.doesNotMatch(worker, /^nodejs_active_handles_total/m)
  })

  it('promtool check rules and test rules pass on deploy/prometheus', () => {
    const check = promtool(['check', 'rules', RULES])
    assert.equal(check.status, 0, check.output)
    const test = promtool(['test', 'rules', RULE_TESTS])
    assert.equal(test.status, 0, test.output)
  })

  it('every query of deploy/grafana/dashboard.json parses (promtool check rules on them as recording rules)', () => {
    const queries = dashboardQueries()
    assert.ok(queries.length >= 10, 'the dashboard has its panels')
    const rules = { groups: [{ name: 'dashboard', rules: queries.map((q, i) => ({ record: `dashboard:query_${i}`, expr: q.expr })) }] }
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'dashboard-')), 'queries.yml')
    fs.writeFileSync(file, JSON.stringify(rules)) // JSON is YAML
    const r = promtool(['check', 'rules', file])
    assert.equal(r.status, 0, r.output)
  })

  it('every metric the rules and the dashboard read is one the processes export', async () => {
    const exported = new Set([...familiesOf(await scrape(`${api.base}/metrics`)), ...familiesOf(await scrape(workerMetrics)), 'up'])
    const exprs = [...fs.readFileSync(RULES, 'utf8').matchAll(/expr: (?:\|\n)?([\s\S]*?)\n\s+(?:for|labels):/g)].map(m => m[1])
    assert.equal(exprs.length, 7, 'every alert expression was read')
    for (const expr of [...exprs, ...dashboardQueries().map(q => q.expr)]) {
      for (const name of metricsOf(expr)) assert.ok(exported.has(name), `${name} (in ${expr.trim()}) is not exported`)
    }
  })
})
