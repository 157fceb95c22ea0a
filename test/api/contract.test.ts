import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { newTenant, silentLog, startServer, type Client, type Response, type TestServer } from '../support/harness.js'
import { wireModules } from '../../lib/modules.js'
import { inDays, newIssuer } from '../support/license.js'
import * as automation from '../../lib/automation/index.js'

// The contract test: every operation of /openapi/v1.json has an example (RouteSpec.example), and
// replaying each one against the running service answers the documented status with a body that
// validates against the documented response schema. Everything is read from the served document,
// so the document and this test share the examples. Examples run in an order derived from the
// document (a placeholder is used only after the example that saves it; x-example.after), on a
// fresh tenant as its owner; between examples the test plays the worker for queued automation runs.

const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv }
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

interface Parameter { name: string, in: 'path' | 'query' | 'header', example?: unknown }
interface MediaType { schema?: object, examples?: Record<string, { value: unknown }> }
interface XExample {
  summary: string
  status: number
  bearer?: string
  saves?: Record<string, string>
  after?: string[]
  setup?: Array<{ method: string, path: string, body?: unknown, saves?: Record<string, string> }>
}
interface Operation {
  operationId: string
  security?: Array<Record<string, unknown>>
  parameters?: Parameter[]
  requestBody?: { content: Record<string, MediaType> }
  responses: Record<string, { content?: Record<string, MediaType> }>
  'x-example'?: XExample
}
interface Doc { paths: Record<string, Record<string, Operation>>, 'x-example-placeholders'?: Record<string, string>, components: { schemas: Record<string, object> } }
interface Step { name: string, path: string, method: string, op: Operation, example: XExample }

/** GET /v1/x (operationId): how a failure names the route. */
const label = (method: string, path: string, op: Operation) => `${method.toUpperCase()} ${path} (${op.operationId})`

function operations (doc: Doc): Array<{ method: string, path: string, op: Operation }> {
  const out = []
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const method of METHODS) if (ops[method] !== undefined) out.push({ method, path, op: ops[method] })
  }
  return out
}

/** Every placeholder sample a value mentions. */
function samplesIn (value: unknown, samples: Record<string, string>): string[] {
  const text = JSON.stringify(value ?? null)
  return Object.entries(samples).filter(([, sample]) => text.includes(sample)).map(([name]) => name)
}

/**
 * Runs each example after those it depends on: the examples (or setup steps) that save a
 * placeholder it uses, and those named in x-example.after. Ties keep the document's order.
 */
function order (steps: Step[], samples: Record<string, string>, supplied: Set<string>): Step[] {
  const savers = new Map<string, Step[]>()
  for (const s of steps) {
    for (const n of [...Object.keys(s.example.saves ?? {}), ...(s.example.setup ?? []).flatMap(x => Object.keys(x.saves ?? {}))]) {
      savers.set(n, [...(savers.get(n) ?? []), s])
    }
  }
  const byId = new Map(steps.map(s => [s.op.operationId, s]))
  const deps = new Map<Step, Set<Step>>()
  for (const s of steps) {
    const own = new Set((s.example.setup ?? []).flatMap(x => Object.keys(x.saves ?? {})))
    const d = new Set<Step>()
    for (const n of samplesIn([s.op.parameters, s.op.requestBody, s.example.setup, s.example.bearer], samples)) {
      if (supplied.has(n) || own.has(n)) continue
      const by = savers.get(n)
      assert.ok(by !== undefined, `${s.name}: its example uses {${n}}, which no example saves (add "saves" to the example that creates it)`)
      for (const x of by) if (x !== s) d.add(x)
    }
    for (const id of s.example.after ?? []) {
      const x = byId.get(id)
      assert.ok(x !== undefined, `${s.name}: x-example.after names ${id}, which has no example`)
      d.add(x)
    }
    deps.set(s, d)
  }
  const done = new Set<Step>()
  const out: Step[] = []
  while (out.length < steps.length) {
    const next = steps.find(s => !done.has(s) && [...deps.get(s)!].every(d => done.has(d)))
    assert.ok(next !== undefined, `examples depend on each other in a cycle: ${steps.filter(s => !done.has(s)).map(s => s.name).join(', ')}`)
    done.add(next)
    out.push(next)
  }
  return out
}

/** A dotted path into a response body: 'id', 'items.0.id', 'runIds.0'. */
function pick (body: unknown, path: string): unknown {
  return path.split('.').reduce<any>((v, k) => v?.[k], body)
}

/** Deep-inlines local $refs (#/components/schemas/X) so ajv gets one self-contained schema. */
function inline (schema: unknown, doc: Doc): unknown {
  if (Array.isArray(schema)) return schema.map(s => inline(s, doc))
  if (schema === null || typeof schema !== 'object') return schema
  const ref = (schema as { $ref?: string }).$ref
  if (ref !== undefined) return inline(doc.components.schemas[ref.replace('#/components/schemas/', '')], doc)
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, inline(v, doc)]))
}

describe('contract: every documented example replays against the running service', () => {
  const issuer = newIssuer()
  let s: TestServer
  let doc: Doc
  let owner: Client
  let tenant: string
  const ajv = new Ajv({ allErrors: true, strict: false })
  addFormats.default(ajv)

  before(async () => {
    // A license in force for every tenant (so installLicense has a key to verify against) and a
    // real pg-boss sender (webhook ingress and replays queue runs).
    s = await startServer({ LICENSE_PUBLIC_KEY: issuer.publicKey, LICENSE_KEY: issuer.sign({ exp: inDays(365) }) }, { jobs: true })
    tenant = newTenant('contract')
    owner = s.as(tenant, ['owner'])
    const res = await s.request('GET', '/openapi/v1.json')
    assert.equal(res.status, 200)
    doc = res.body
  })
  after(() => s?.close())

  it('every operation has an example', () => {
    const missing = operations(doc).filter(o => o.op['x-example'] === undefined).map(o => label(o.method, o.path, o.op))
    assert.deepEqual(missing, [], 'operations without an example: add `example` to their RouteSpec (server/routes, see RouteExample in server/http/route.ts)')
  })

  it('each example answers its documented status and a body valid against the documented schema', async t => {
    const samples = doc['x-example-placeholders'] ?? {}
    const values = new Map<string, string>([['licenseKey', issuer.sign({ tenant, exp: inDays(365), edition: 'contract-test' })]])
    const steps = operations(doc).filter(o => o.op['x-example'] !== undefined)
      .map(o => ({ ...o, name: label(o.method, o.path, o.op), example: o.op['x-example']! }))
    const ordered = order(steps, samples, new Set(values.keys()))

    /** Placeholder samples -> the values saved so far; an unsaved one fails naming the route. */
    const bind = <T>(value: T, where: string): T => {
      let text = JSON.stringify(value ?? null)
      for (const [name, sample] of Object.entries(samples)) {
        if (!text.includes(sample)) continue
        const v = values.get(name)
        assert.ok(v !== undefined, `${where}: {${name}} has no value yet (no earlier example saved it)`)
        text = text.split(sample).join(JSON.stringify(v).slice(1, -1))
      }
      return JSON.parse(text) as T
    }
    const save = (saves: Record<string, string> | undefined, body: unknown, where: string) => {
      for (const [name, path] of Object.entries(saves ?? {})) {
        const v = pick(body, path)
        assert.ok(typeof v === 'string' || typeof v === 'number', `${where}: saves {${name}} from "${path}", which the answer does not hold`)
        values.set(name, String(v))
      }
    }

    for (const step of ordered) {
      await t.test(step.name, async () => {
        for (const [i, setup] of (step.example.setup ?? []).entries()) {
          const x = bind(setup, `${step.name} setup[${i}]`)
          const res = await s.request(x.method.toUpperCase(), x.path, { token: owner.token, body: x.body })
          assert.ok(res.status >= 200 && res.status < 300, `${step.name} setup[${i}] ${x.method} ${x.path}: ${res.status} ${res.text}`)
          save(x.saves, res.body, `${step.name} setup[${i}]`)
        }
        const res = await replay(step, bind(requestOf(step), step.name))
        assert.equal(res.status, step.example.status, `${step.name}: "${step.example.summary}" answered ${res.status}: ${res.text.slice(0, 500)}`)
        checkResponse(step, res)
        save(step.example.saves, res.body, step.name)
        await runQueuedAutomation()
      })
    }
  })

  function requestOf (step: Step) {
    const params = step.op.parameters ?? []
    let path = step.path
    for (const p of params.filter(p => p.in === 'path')) {
      assert.ok(p.example !== undefined, `${step.name}: path parameter ${p.name} has no example value`)
      path = path.replace(`{${p.name}}`, encodeURIComponent(String(p.example)))
    }
    const query = new URLSearchParams()
    for (const p of params.filter(p => p.in === 'query' && p.example !== undefined)) {
      query.set(p.name, typeof p.example === 'string' ? p.example : JSON.stringify(p.example))
    }
    const headers: Record<string, string> = {}
    for (const p of params.filter(p => p.in === 'header' && p.example !== undefined)) headers[p.name] = String(p.example)
    const body = step.op.requestBody?.content['application/json']?.examples?.contract?.value
    const bearer = (step.op.security ?? []).some(sec => 'bearerAuth' in sec)
    return { url: query.size > 0 ? `${path}?${query}` : path, headers, body, token: bearer ? owner.token : step.example.bearer }
  }

  async function replay (step: Step, r: ReturnType<typeof requestOf>): Promise<Response> {
    return s.request(step.method.toUpperCase(), r.url, { token: r.token, headers: r.headers, body: r.body })
  }

  function checkResponse (step: Step, res: Response): void {
    const documented = step.op.responses[String(res.status)]
    assert.ok(documented !== undefined, `${step.name}: status ${res.status} is not documented`)
    const content = documented.content
    if (content === undefined) {
      assert.equal(res.text, '', `${step.name}: ${res.status} is documented without a body`)
      return
    }
    const actual = (res.headers.get('content-type') ?? '').split(';')[0].trim()
    const type = Object.keys(content).find(t => t === actual)
    assert.ok(type !== undefined, `${step.name}: answered ${actual}, documented ${Object.keys(content).join(', ')}`)
    if (!/[/+]json$/.test(type)) return
    const validate = ajv.compile(inline(content[type].schema ?? {}, doc) as object)
    assert.ok(validate(res.body), `${step.name}: the ${res.status} body does not match the documented schema: ${ajv.errorsText(validate.errors)}`)
  }

  /** What the worker would do next: execute the tenant's queued automation runs (last try, so failures are recorded). */
  async function runQueuedAutomation (): Promise<void> {
    const queued = await s.db('automation_runs').where({ tenant_id: tenant, status: 'queued' }).select<Array<{ id: string }>>('id')
    for (const { id } of queued) {
      const ctx = automation.engineContext({ db: s.db, config: s.config, log: silentLog, jobs: null, sequencer: s.sequencer, hooks: wireModules() }, tenant, randomUUID())
      await automation.executeRun(ctx, id, true)
    }
  }
})
