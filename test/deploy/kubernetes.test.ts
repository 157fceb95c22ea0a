import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import { parse } from 'yaml'
import { render, type K8sObject } from '../support/kustomize.js'
import { validate } from '../support/kubernetes.js'
import { packageVersion } from '../../lib/release/index.js'
import { TEST_DATABASE_URL } from '../support/env.js'

// deploy/kubernetes: the base and both overlays render (test/support/kustomize.ts, no kubectl
// needed) and every object validates against its schema, unknown fields included.

const root = path.resolve(import.meta.dirname, '../../deploy/kubernetes')
const TREES = ['base', 'overlays/postgres', 'overlays/citus']
const rendered = new Map(TREES.map(t => [t, render(path.join(root, t))]))
const find = (objects: K8sObject[], kind: string, name?: string) => {
  const o = objects.find(x => x.kind === kind && (name === undefined || x.metadata.name === name))
  assert.ok(o, `no ${kind} ${name ?? ''}`)
  return o as any // fields are read as the manifests write them; validate() checks their shape
}

describe('deploy/kubernetes', () => {
  const counts: string[] = []
  after(() => console.log(`validated Kubernetes objects: ${counts.join(', ')}`))

  for (const [tree, objects] of rendered) {
    it(`${tree}: every object validates, unknown fields refused`, () => {
      for (const o of objects) validate(o)
      counts.push(`${tree} ${objects.length}`)
    })
  }

  it('refuses an unknown field at any depth, in core and custom resources', () => {
    const base = rendered.get('base')!
    const cases: Array<[K8sObject, (o: any) => void]> = [
      [find(base, 'Deployment', 'spatial-api'), o => { o.spec.template.spec.containers[0].readinessProbe.httpGet.pathh = '/x' }],
      [find(base, 'Deployment', 'spatial-api'), o => { o.spec.replica = 2 }],
      [find(base, 'ScaledObject'), o => { o.spec.minReplicas = 1 }],
      [find(base, 'ServiceMonitor'), o => { o.spec.endpoints[0].bearerTokenSecrett = {} }],
      [find(base, 'NetworkPolicy', 'spatial-worker-webhooks'), o => { o.spec.egress[0].to[0].ipBlock.exclude = [] }]
    ]
    for (const [object, spoil] of cases) {
      const o = structuredClone(object)
      spoil(o)
      assert.throws(() => validate(o), /unknown field/)
    }
  })

  it('overlays differ from the base only in namespace and database', () => {
    const base = rendered.get('base')!
    const url = (t: string) => find(rendered.get(t)!, 'Secret').stringData.DATABASE_URL
    assert.equal(url('base'), '')
    assert.match(url('overlays/postgres'), /^postgres:\/\/.+@postgresql\./)
    assert.match(url('overlays/citus'), /^postgres:\/\/.+@citus-coordinator\./)
    const patched = ['Secret/spatial-secrets', 'NetworkPolicy/spatial-allow-postgresql']
    for (const t of TREES.slice(1)) {
      assert.equal(rendered.get(t)!.length, base.length)
      for (const o of rendered.get(t)!) {
        const { namespace, ...metadata } = o.metadata
        assert.equal(namespace, 'spatial', `${t} ${o.kind}`)
        if (!patched.includes(`${o.kind}/${o.metadata.name}`)) assert.deepEqual({ ...o, metadata }, find(base, o.kind, o.metadata.name))
      }
    }
  })

  it('the configuration holds every variable of README, each once', () => {
    const readme = fs.readFileSync(path.join(root, '../../README.md'), 'utf8')
    const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
    const documented = [...table.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map(m => m[1]).sort()
    const base = rendered.get('base')!
    const keys = [...Object.keys(find(base, 'ConfigMap').data), ...Object.keys(find(base, 'Secret').stringData)].sort()
    assert.ok(documented.length > 20)
    assert.deepEqual(documented.filter(v => !keys.includes(v)), [], 'in README, missing from deploy/kubernetes/base/config.yaml')
    assert.deepEqual(keys.filter(v => !documented.includes(v)), [], 'in config.yaml, not in README')
    assert.equal(new Set(keys).size, keys.length, 'in both the ConfigMap and the Secret')
  })

  it('the image tag and the release Job name carry the release', () => {
    const version = packageVersion()
    for (const objects of rendered.values()) {
      const job = find(objects, 'Job')
      assert.equal(job.metadata.name, `spatial-release-${version}`)
      for (const o of objects.filter(x => ['Deployment', 'Job'].includes(x.kind))) {
        for (const c of (o as any).spec.template.spec.containers) assert.equal(c.image, `registry.example.com/spatial-platform:${version}`)
      }
    }
  })

  it('the API probes the health routes, and the processes run the Procfile commands', () => {
    const base = rendered.get('base')!
    const api = find(base, 'Deployment', 'spatial-api').spec.template.spec.containers[0]
    const routes = fs.readFileSync(path.join(root, '../../server/routes/platform.ts'), 'utf8')
    for (const probe of [api.readinessProbe, api.livenessProbe, api.startupProbe]) assert.ok(routes.includes(`path: '${probe.httpGet.path}'`), probe.httpGet.path)
    assert.equal(api.readinessProbe.httpGet.path, '/v1/health/ready')
    const procfile = fs.readFileSync(path.join(root, '../../Procfile'), 'utf8')
    const command = (kind: string, name: string) => find(base, kind, name).spec.template.spec.containers[0].command.join(' ')
    assert.ok(procfile.includes(`web: ${command('Deployment', 'spatial-api')}`))
    assert.ok(procfile.includes(`worker: ${command('Deployment', 'spatial-worker')}`))
    assert.ok(procfile.includes(`release: ${command('Job', `spatial-release-${packageVersion()}`)}`))
  })

  it("KEDA's query runs on pg-boss's job table and returns a count", async () => {
    const query = find(rendered.get('base')!, 'ScaledObject').spec.triggers[0].metadata.query
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await client.connect()
    try {
      const r = await client.query(query)
      assert.equal(r.rows.length, 1)
      assert.ok(Number.isInteger(Number(Object.values(r.rows[0])[0])))
    } finally {
      await client.end()
    }
  })

  const rules = path.join(root, '../prometheus/rules.yml')
  it('the PrometheusRule carries deploy/prometheus/rules.yml', { skip: !fs.existsSync(rules) && 'no deploy/prometheus/rules.yml' }, () => {
    assert.deepEqual(find(rendered.get('base')!, 'PrometheusRule').spec.groups, parse(fs.readFileSync(rules, 'utf8')).groups)
  })

  const kubectl = (() => { try { execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' }); return true } catch { return false } })()
  it('renders as kubectl kustomize does', { skip: !kubectl && 'kubectl not installed' }, () => {
    const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`
    for (const [tree, objects] of rendered) {
      const theirs = execFileSync('kubectl', ['kustomize', path.join(root, tree)], { encoding: 'utf8' })
        .split(/^---$/m).map(d => parse(d) as K8sObject).filter(o => o !== null)
      const byKey = (list: K8sObject[]) => Object.fromEntries(list.map(o => [key(o), o]))
      assert.deepEqual(byKey(objects), byKey(theirs), tree)
    }
  })
})
