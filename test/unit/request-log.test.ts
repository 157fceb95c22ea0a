import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLogger } from '../../lib/log.js'
import { requestState } from '../../server/middleware/observe.js'

// A request's `state.log` (server/middleware/observe.ts): one accessor shared by every request,
// each request's child logger its own, made on first read and bound to its request id.

test('state.log is made on first read, bound to the request id, and kept per request', () => {
  const root = createLogger('test', 'error')
  const a = requestState(root, 'req-a')
  const b = requestState(root, 'req-b')
  assert.equal(a.requestId, 'req-a')
  const la = a.log as unknown as { fields: Record<string, unknown> }
  const lb = b.log as unknown as { fields: Record<string, unknown> }
  assert.equal(la.fields.requestId, 'req-a')
  assert.equal(lb.fields.requestId, 'req-b')
  assert.notEqual(la, lb)
  assert.equal(a.log, la, 'the same child on every read')
  assert.notEqual(la, root)
})

test('state.log can be replaced, and a copy of the state carries the logger', () => {
  const root = createLogger('test', 'error')
  const s = requestState(root, 'req-1')
  assert.ok(Object.keys(s).includes('log'), 'log is an enumerable property of the state')
  const copy = { ...s, extra: 1 }
  assert.equal(copy.log, s.log)
  const other = createLogger('other', 'error')
  s.log = other
  assert.equal(s.log, other)
})
