import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { recentTenants, tenantGate } from '../../server/middleware/tenant-gate.js'
import type { RouteRequest } from '../../server/http/route.js'

const request = (tenantId: string) => ({ service: { tenantId }, state: {}, answerHeaders: {} }) as unknown as RouteRequest & { state: { release?: () => void, pace?: (bytes: number) => number } }

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

  it('with a burst, gives a tenant whose requests are short more slots, and one that owes time only its own', async () => {
    const gate = tenantGate({ maxConcurrent: 1, maxQueued: 0, maxWaitMs: 1000, burst: { slots: 3, creditMs: 200 } })
    const hold = () => { const r = request('t'); const admitted = gate(r) === undefined; return { admitted, release: () => r.state.release?.() } }
    const refused = (e: any) => e.code === 'RATE_LIMITED'
    // New to the gate: no credit yet, and its usual time taken to be the whole credit.
    const first = hold()
    assert.ok(first.admitted)
    assert.throws(() => gate(request('t')), refused)
    first.release()
    // Twenty requests that take no time, then a pause that earns the credit back.
    for (let i = 0; i < 20; i++) hold().release()
    await new Promise(resolve => setTimeout(resolve, 250))
    const three = [hold(), hold(), hold()]
    assert.deepEqual(three.map(h => h.admitted), [true, true, true])
    assert.throws(() => gate(request('t')), refused, 'no more than the burst\'s slots')
    // Each held 300 ms, three times the credit between them: the tenant owes, and has one slot.
    await new Promise(resolve => setTimeout(resolve, 300))
    for (const h of three) h.release()
    const one = hold()
    assert.ok(one.admitted)
    assert.throws(() => gate(request('t')), refused)
    assert.equal(gate(request('other')), undefined, 'another tenant is not held up')
    one.release()
  })

  it('lets a tenant alone in the process hold up to `alone` slots, and keeps it to its own from the moment another tenant enters', async () => {
    const recent = recentTenants(100)
    const lane = tenantGate({ maxConcurrent: 1, maxQueued: 0, maxWaitMs: 1000, recent, alone: 3 })
    const general = tenantGate({ maxConcurrent: 8, maxQueued: 0, maxWaitMs: 1000, recent })
    const refused = (e: any) => e.code === 'RATE_LIMITED'
    const three = [request('t'), request('t'), request('t')]
    for (const r of three) assert.equal(lane(r), undefined)
    assert.throws(() => lane(request('t')), refused, 'no more than `alone` slots')
    for (const r of three) r.state.release?.()
    // Another tenant's light request, through the other gate that shares `recent`.
    const light = request('other')
    assert.equal(general(light), undefined)
    light.state.release?.()
    const one = request('t')
    assert.equal(lane(one), undefined)
    assert.throws(() => lane(request('t')), refused, 'one slot while another tenant was here within the window')
    one.state.release?.()
    // The window passes with nobody else: alone again.
    await new Promise(resolve => setTimeout(resolve, 150))
    const two = [request('t'), request('t')]
    for (const r of two) assert.equal(lane(r), undefined)
    for (const r of two) r.state.release?.()
  })

  it('charges the answers of a tenant let in while another is there to one allowance, refilled at the pace up to a second of it', async () => {
    const recent = recentTenants(60_000)
    const lane = tenantGate({ maxConcurrent: 2, maxQueued: 0, maxWaitMs: 1000, recent, paceBytesPerSecond: 1000 })
    const alone = request('t')
    assert.equal(lane(alone), undefined)
    assert.equal(alone.state.pace, undefined, 'alone: unpaced')
    alone.state.release?.()
    assert.equal(lane(request('other')), undefined)
    const [one, two] = [request('t'), request('t')]
    for (const r of [one, two]) assert.equal(lane(r), undefined)
    assert.equal(one.state.pace!(600), 0, 'within the allowance of one second (1,000 bytes)')
    // Both answers draw on the same allowance: 400 bytes left, 900 asked, 500 owed at 1,000 a second.
    const wait = two.state.pace!(900)
    assert.ok(wait > 490 && wait <= 500, `waits ${wait} ms`)
    // A timer may fire a fraction of a ms before performance.now() says its time is up.
    await new Promise(resolve => setTimeout(resolve, 100))
    const later = one.state.pace!(0)
    assert.ok(later > 380 && later < 402, `after 100 ms the debt is 100 bytes smaller: waits ${later} ms`)
  })

  it('keeps what a tenant has spent of its allowance when its last slot is given back, without a burst too', () => {
    const recent = recentTenants(60_000)
    const lane = tenantGate({ maxConcurrent: 1, maxQueued: 0, maxWaitMs: 1000, recent, paceBytesPerSecond: 1000 })
    assert.equal(lane(request('other')), undefined)
    const first = request('t')
    assert.equal(lane(first), undefined)
    assert.equal(first.state.pace!(1000), 0)
    first.state.release?.()
    const next = request('t')
    assert.equal(lane(next), undefined)
    const wait = next.state.pace!(500)
    assert.ok(wait > 480, `the allowance was spent, not renewed with the slot: waits ${wait} ms`)
  })
})
