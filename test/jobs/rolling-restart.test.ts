import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import { once } from 'node:events'
import pg from 'pg'
import { token } from '../support/harness.js'
import { scratchDatabase, startApi, startReceiver, startWorker, stopAllWorkers, waitUntil, type Receiver, type WorkerProcess } from '../support/automation.js'

// docs/operations.md "Rolling restart": web and worker processes are replaced one at a time while a
// client writes steadily and automation rules fire. The client balances as a load balancer does:
// it sends to backends whose readiness answers 200, and a connection refused is sent elsewhere (the
// request never reached a process). Anything else that is not a 2xx answer is a failed write.

type Api = WorkerProcess & { base: string }
interface Accepted { objectId: string, version: number, n: number }

/** Backends in rotation by their readiness, polled as a load balancer's health check does. */
function loadBalancer () {
  const backends: Array<{ api: Api, ready: boolean }> = []
  let next = 0
  let polling = true
  const poll = async (): Promise<void> => {
    while (polling) {
      await Promise.all(backends.map(async b => {
        b.ready = await fetch(`${b.api.base}/v1/health/ready`).then(r => r.status === 200, () => false)
      }))
      await new Promise(resolve => setTimeout(resolve, 200))
    }
  }
  const polled = poll()
  return {
    add (api: Api) { backends.push({ api, ready: true }) },
    remove (api: Api) { backends.splice(backends.findIndex(b => b.api === api), 1) },
    async stop () { polling = false; await polled },
    /** The answer of the first ready backend that takes the connection; throws on anything else. */
    async send (method: string, path: string, bearer: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number, body: any }> {
      const deadline = Date.now() + 60_000
      for (;;) {
        const live = backends.filter(b => b.ready)
        if (live.length === 0) {
          if (Date.now() > deadline) throw new Error('no backend ready for 60 s')
          await new Promise(resolve => setTimeout(resolve, 50))
          continue
        }
        const b = live[next++ % live.length]
        try {
          const res = await fetch(b.api.base + path, {
            method, headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body)
          })
          const text = await res.text()
          return { status: res.status, body: text === '' ? null : JSON.parse(text) }
        } catch (err) {
          if ((err as { cause?: { code?: string } }).cause?.code !== 'ECONNREFUSED') throw err
          b.ready = false
        }
      }
    }
  }
}

describe('rolling restart of web and workers under load', { timeout: 600_000 }, () => {
  let database: Awaited<ReturnType<typeof scratchDatabase>>
  let receiver: Receiver
  let db: pg.Client
  const lb = loadBalancer()
  const tenant = `rolling-${Date.now()}`
  const bearer = token({ tenant, roles: ['owner'], sub: 'client' })
  before(async () => {
    database = await scratchDatabase()
    receiver = await startReceiver()
    db = new pg.Client({ connectionString: database.url })
    await db.connect()
  })
  after(async () => {
    await lb.stop()
    await stopAllWorkers()
    await db?.end()
    await receiver?.close()
    await database?.drop()
  })

  it('an API process on SIGTERM answers readiness 503, takes no connection and finishes the request in progress', async () => {
    const api = await startApi({ DATABASE_URL: database.url })
    const drainTenant = `drain-${Date.now()}`
    const owner = token({ tenant: drainTenant, roles: ['owner'], sub: 'client' })
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(api.base + path, { method, headers: { Authorization: `Bearer ${owner}`, 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) })
      return { status: res.status, connection: res.headers.get('connection'), body: await res.json() as any }
    }
    const type = await call('POST', '/v1/object-types', { key: 'pole', name: 'Pole', attributeSchema: { type: 'object' } })
    assert.equal((await call('POST', `/v1/object-types/${type.body.id}/publish`, { to: 'published' })).status, 200)
    const object = (await call('POST', '/v1/objects', { typeId: type.body.id })).body
    // One keep-alive connection, open before the signal.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const ready = () => new Promise<{ status: number, connection: string | undefined, body: any }>((resolve, reject) => {
      http.get(`${api.base}/v1/health/ready`, { agent }, res => {
        let text = ''
        res.on('data', d => { text += String(d) })
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: JSON.parse(text) }))
      }).on('error', reject)
    })
    assert.equal((await ready()).status, 200)
    const locker = new pg.Client({ connectionString: database.url })
    await locker.connect()
    try {
      // The PATCH blocks on the object's row until the locker commits: a request in progress.
      await locker.query('BEGIN')
      await locker.query('SELECT 1 FROM objects WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [drainTenant, object.id])
      const lockerPid = (await locker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid
      const patch = call('PATCH', `/v1/objects/${object.id}`, { attributes: { height: 3 } }, { 'If-Match': '"1"' })
      await waitUntil(async () => (await db.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [lockerPid])).rows[0].n > 0, 30_000, 'the PATCH to block')
      const exited = once(api.child, 'exit')
      api.child.kill('SIGTERM')
      await waitUntil(() => /shutting down/.test(api.output()), 30_000, 'the API to begin its stop')
      const draining = await ready()
      assert.deepEqual([draining.status, draining.body.checks.shutdown, draining.connection], [503, 'draining', 'close'])
      const refused = await new Promise<string>(resolve => net.connect(Number(new URL(api.base).port), '127.0.0.1').on('connect', () => resolve('connected')).on('error', e => resolve((e as NodeJS.ErrnoException).code!)))
      assert.equal(refused, 'ECONNREFUSED', 'no new connection is taken')
      assert.equal(api.child.exitCode, null, 'still running while a request is in progress')
      await locker.query('COMMIT')
      const answered = await patch
      assert.deepEqual([answered.status, answered.body.version, answered.connection], [200, 2, 'close'])
      const [code] = await exited
      assert.equal(code, 0, api.output().slice(-2000))
    } finally {
      agent.destroy()
      await locker.end()
      await api.stop()
    }
  })

  it('answers every write 2xx, keeps every accepted write and applies every run once', async () => {
    const env = { DATABASE_URL: database.url }
    let apis: Api[] = await Promise.all([startApi(env), startApi(env)])
    let workers: WorkerProcess[] = await Promise.all([startWorker(env), startWorker(env)])
    for (const api of apis) lb.add(api)
    const send = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => lb.send(method, path, bearer, body, headers)

    const type = await send('POST', '/v1/object-types', {
      key: 'meter', name: 'Meter', attributeSchema: { type: 'object', properties: { kind: { type: 'string' }, n: { type: 'number' }, stamped: { type: 'string' } } }
    })
    assert.equal(type.status, 201, JSON.stringify(type.body))
    assert.equal((await send('POST', `/v1/object-types/${type.body.id}/publish`, { to: 'published' })).status, 200)
    const typeId = type.body.id as string
    const rules: Record<string, string> = {}
    for (const rule of [
      // A database effect on every created 'auto' object (the client never updates those, so no If-Match races it).
      { name: 'stamp', trigger: { type: 'object.event', events: ['object.created'], typeId }, match: { type: 'attribute', path: '$.object.attributes.kind', operator: 'equals', value: 'auto' }, effect: { type: 'object.update', attributes: { stamped: '{{run.id}}' } } },
      // A webhook for every version of every object, the stamps included.
      { name: 'notify', trigger: { type: 'object.event', events: ['object.created', 'object.updated'], typeId }, effect: { type: 'webhook', url: `${receiver.url}/hook`, body: { object: '{{payload.object.id}}', version: '{{payload.object.version}}' }, retry: { maxAttempts: 5 } } }
    ]) {
      const created = await send('POST', '/v1/automation/rules', rule)
      assert.equal(created.status, 201, JSON.stringify(created.body))
      assert.equal((await send('POST', `/v1/automation/rules/${created.body.id}/publish`, { to: 'active' })).status, 200)
      rules[rule.name] = created.body.id
    }

    // The client: two writers, each creating an 'auto' object, then a 'manual' one it updates twice.
    const accepted: Accepted[] = []
    const failures: string[] = []
    let writing = true
    let n = 0
    const write = async (method: string, path: string, body: Record<string, any>, headers?: Record<string, string>): Promise<any> => {
      const value = ++n
      try {
        const res = await send(method, path, { ...body, attributes: { ...body.attributes, n: value } }, headers)
        if (res.status >= 300) { failures.push(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`); return null }
        accepted.push({ objectId: res.body.id, version: res.body.version, n: value })
        return res.body
      } catch (err) {
        failures.push(`${method} ${path}: ${(err as Error).message} ${String((err as { cause?: unknown }).cause)}`)
        return null
      }
    }
    const writer = async (): Promise<void> => {
      while (writing) {
        await write('POST', '/v1/objects', { typeId, attributes: { kind: 'auto' } })
        let o = await write('POST', '/v1/objects', { typeId, attributes: { kind: 'manual' } })
        for (let i = 0; i < 2 && o !== null; i++) o = await write('PATCH', `/v1/objects/${o.id}`, { attributes: {} }, { 'If-Match': `"${o.version}"` })
        await new Promise(resolve => setTimeout(resolve, 50))
      }
    }
    const writers = Promise.all(Array.from({ length: 2 }, writer))

    // One process at a time: SIGTERM it, start its replacement, wait until the replacement is ready.
    let restarted = 0
    const settle = () => waitUntil(() => accepted.length >= restarted * 20 + 20, 60_000, 'writes between restarts')
    try {
      await settle()
      for (let i = 0; i < apis.length; i++) {
        const old = apis[i]
        const [, fresh] = await Promise.all([old.stop(), startApi(env)])
        assert.equal(old.child.exitCode, 0, `API ${i + 1} stopped cleanly:\n${old.output().slice(-2000)}`)
        lb.remove(old)
        lb.add(fresh)
        apis = apis.map(a => a === old ? fresh : a)
        restarted++
        await settle()
      }
      for (let i = 0; i < workers.length; i++) {
        const old = workers[i]
        const [, fresh] = await Promise.all([old.stop(), startWorker(env)])
        assert.equal(old.child.exitCode, 0, `worker ${i + 1} stopped cleanly:\n${old.output().slice(-2000)}`)
        workers = workers.map(w => w === old ? fresh : w)
        restarted++
        await settle()
      }
    } finally {
      writing = false
      await writers
    }

    // Drained: no undelivered event and no run in progress, and one delivery per notify run.
    const one = async (text: string, values: unknown[] = []) => (await db.query(text, [tenant, ...values])).rows[0]
    let pending: Record<string, number> = {}
    await waitUntil(async () => {
      pending = await one('SELECT (SELECT count(*) FROM outbox_events WHERE tenant_id = $1 AND delivered_at IS NULL)::int AS events, (SELECT count(*) FROM automation_runs WHERE tenant_id = $1 AND status IN (\'queued\', \'running\'))::int AS runs')
      return pending.events === 0 && pending.runs === 0
    }, 300_000, 'the outbox and the runs to drain').catch(async err => {
      const jobs = await db.query('SELECT name, state, count(*)::int AS n FROM pgboss.job GROUP BY 1, 2 ORDER BY 1, 2')
      throw new Error(`${(err as Error).message}: ${JSON.stringify(pending)} pending of ${accepted.length} writes; jobs ${JSON.stringify(jobs.rows)}`)
    })

    // Every accepted write is there, as written.
    const present = await db.query('SELECT object_id, version, (attributes->>\'n\')::int AS n FROM object_versions WHERE tenant_id = $1', [tenant])
    const versions = new Map(present.rows.map(r => [`${r.object_id}/${r.version}`, r.n]))
    const missing = accepted.filter(a => versions.get(`${a.objectId}/${a.version}`) !== a.n)
    assert.deepEqual(missing, [], 'every accepted write is present')

    // Every run succeeded but the stamp's on 'manual' objects (skipped, unmatched); each 'auto' object
    // was stamped once; each version was notified once.
    const runs = await db.query('SELECT id, rule_id, status, matched, trigger_key FROM automation_runs WHERE tenant_id = $1', [tenant])
    const skipped = runs.rows.filter(r => r.status === 'skipped' && r.matched === false && r.rule_id === rules.stamp)
    assert.deepEqual(runs.rows.filter(r => r.status !== 'succeeded' && !skipped.includes(r)), [], 'every run succeeded or did not match')
    assert.equal(new Set(runs.rows.map(r => `${r.rule_id}/${r.trigger_key}`)).size, runs.rows.length, 'one run per rule and event')
    const autos = await one('SELECT count(*)::int AS objects, count(*) FILTER (WHERE version = 2 AND attributes ? \'stamped\')::int AS stamped FROM objects WHERE tenant_id = $1 AND attributes->>\'kind\' = \'auto\'')
    const manual = await one('SELECT count(*)::int AS n FROM objects WHERE tenant_id = $1 AND attributes->>\'kind\' = \'manual\'')
    assert.equal(skipped.length, manual.n, 'the stamp skipped each manual object once')
    const stamps = await one('SELECT count(*)::int AS n, count(DISTINCT object_id)::int AS objects FROM object_versions WHERE tenant_id = $1 AND actor->>\'sub\' = $2', [`automation:${rules.stamp}`])
    assert.ok(autos.objects > 0)
    assert.deepEqual({ stamped: autos.stamped, stamps: stamps.n, stampedObjects: stamps.objects }, { stamped: autos.objects, stamps: autos.objects, stampedObjects: autos.objects }, 'each auto object stamped exactly once')
    const notifyRuns = runs.rows.filter(r => r.rule_id === rules.notify)
    assert.equal(notifyRuns.length, present.rows.length, 'one notify run per object version')
    // A delivery cut by a worker's stop is sent again with the same Idempotency-Key (the run id:
    // docs/operations.md "Rolling restart"), which the receiver deduplicates on; a second run of
    // the same event would carry another key, and is what must never happen.
    const keys = receiver.received.map(r => r.headers['idempotency-key'] as string)
    const redelivered = keys.length - new Set(keys).size
    assert.deepEqual(new Set(keys), new Set(notifyRuns.map(r => r.id)), 'every notify run delivered, under its own run id')
    const duplicated = notifyRuns.length - new Set(notifyRuns.map(r => r.trigger_key)).size
    const notified = new Set(receiver.received.map(r => { const b = JSON.parse(r.body.toString()); return `${b.object}/${b.version}` }))
    assert.equal(notified.size, present.rows.length, 'every version notified')

    assert.deepEqual(failures, [], 'no failed write')
    const effects = runs.rows.length - skipped.length
    console.log(`rolling restart: processes restarted ${restarted}, writes ${accepted.length} accepted ${accepted.length - missing.length} present, runs ${effects} applied ${autos.stamped + notified.size}, failed ${failures.length}, duplicated ${duplicated}, webhook calls redelivered under the same key ${redelivered}`)
  })
})
