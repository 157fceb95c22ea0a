import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { tenantGate } from '../../server/middleware/tenant-gate.js'
import type { RouteRequest } from '../../server/http/route.js'

const request = (tenantId: string) => ({ service: { tenantId }, state: {}, answerHeaders: {} }) as unknown as RouteRequest & { state: { release?: () => void } }

describe('tenantGate', () => {
  it('admits up to its limit without waiting, then queues first come first served per tenant', async () => {
    const gate = tenantGate({ maxConcurrent: 2, maxQueued: 10, maxWaitMs: 10_000 })
    const [a, b, c, d] = ['t', 't', 't', 't'].map(request)
    assert.equal(gate(a), undefined)
    assert.equal(gate(b), undefined)
    const order: string[] = []
    const waitC = (gate(c) as Promise<void>).then(() => order.push('c'))
    const waitD = (gate(d) as Promise<void>).then(() => order.push('d'))
    assert.equal(gate(request('other')), undefined, 'another tenant is not held up')
    a.state.release?.()
    a.state.release?.() // idempotent: gives back one slot only
    await waitC
    assert.deepEqual(order, ['c'])
    b.state.release?.()
    await waitD
    assert.deepEqual(order, ['c', 'd'])
    c.state.release?.()
    d.state.release?.()
    assert.equal(gate(request('t')), undefined)
  })

  it('refuses beyond its queue at once and after its wait, 429 RATE_LIMITED with Retry-After', async () => {
    const gate = tenantGate({ maxConcurrent: 1, maxQueued: 1, maxWaitMs: 20 })
    gate(request('t'))
    const queued = request('t')
    const waiting = gate(queued) as Promise<void>
    const beyond = request('t')
    assert.throws(() => gate(beyond), (e: any) => e.code === 'RATE_LIMITED' && e.details.retryAfterSeconds === 1)
    assert.equal(beyond.answerHeaders['Retry-After'], '1')
    await assert.rejects(waiting, (e: any) => e.code === 'RATE_LIMITED')
    assert.equal(queued.state.release, undefined, 'a refused request holds no slot')
  })
})
