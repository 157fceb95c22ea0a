import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { renderPublicId, usesSequence } from '../../lib/objects/public-id.js'

const base = { seq: 7, now: new Date('2026-03-04T05:06:07.000Z'), typeKey: 'pipe', attributes: {} as Record<string, unknown> }
const render = (template: string, over: Partial<typeof base> = {}) => renderPublicId(template, { ...base, ...over })

describe('renderPublicId', () => {
  it('renders {{seq}} as the plain number', () => {
    assert.equal(render('{{seq}}'), '7')
  })
  it('zero-pads {{seq:N}} to N digits and never truncates a longer number', () => {
    assert.equal(render('{{seq:5}}'), '00007')
    assert.equal(render('{{seq:2}}', { seq: 12345 }), '12345')
  })
  it('renders {{year}}{{month}}{{day}} in UTC with two-digit month and day', () => {
    assert.equal(render('{{year}}{{month}}{{day}}'), '20260304')
    // 23:30 at UTC-2 is already the next day in UTC.
    assert.equal(render('{{year}}-{{month}}-{{day}}', { now: new Date('2026-12-31T23:30:00.000-02:00') }), '2027-01-01')
  })
  it('renders {{type.key}}', () => {
    assert.equal(render('{{type.key}}-{{seq:3}}'), 'pipe-007')
  })
  it('renders {{attributes.<name>}}, nested paths, numbers, and missing values as empty', () => {
    const attributes = { name: 'Main', n: 12, nested: { code: 'X1' } }
    assert.equal(render('{{attributes.name}}/{{attributes.n}}/{{attributes.nested.code}}/{{attributes.gone}}', { attributes }), 'Main/12/X1/')
  })
  it('keeps literal text and tolerates spaces inside the braces', () => {
    assert.equal(render('PIPE-{{ year }}-{{ seq:4 }}'), 'PIPE-2026-0007')
  })
  it('does not re-expand tokens or $-patterns found inside attribute values', () => {
    assert.equal(render('{{attributes.name}}', { attributes: { name: '{{seq}} $& $1' } }), '{{seq}} $& $1')
  })
})

describe('usesSequence', () => {
  it('is true exactly when a seq token is present', () => {
    assert.equal(usesSequence('A-{{seq}}'), true)
    assert.equal(usesSequence('A-{{ seq:5 }}'), true)
    assert.equal(usesSequence('{{year}}-{{attributes.seq}}'), false)
    assert.equal(usesSequence('static'), false)
  })
})
