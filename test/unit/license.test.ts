import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { seal, statusAt, unseal, verifyLicense } from '../../lib/license/index.js'
import { monthBucket } from '../../lib/counters/index.js'
import { inDays, newIssuer } from '../support/license.js'

const SECRET = 's'.repeat(40)

describe('license status by time (statusAt, a fixed clock)', () => {
  const expiresAt = new Date('2027-03-31T00:00:00.000Z')
  it('is valid, then expiring_soon for the last N days, then expired at expiresAt', () => {
    assert.equal(statusAt(expiresAt, new Date('2027-02-28T23:59:59.999Z'), 30), 'valid')
    assert.equal(statusAt(expiresAt, new Date('2027-03-01T00:00:00.000Z'), 30), 'expiring_soon')
    assert.equal(statusAt(expiresAt, new Date('2027-03-30T23:59:59.999Z'), 30), 'expiring_soon')
    assert.equal(statusAt(expiresAt, new Date('2027-03-31T00:00:00.000Z'), 30), 'expired')
    assert.equal(statusAt(expiresAt, new Date('2027-03-25T00:00:00.000Z'), 5), 'valid', 'LICENSE_EXPIRING_SOON_DAYS moves the threshold')
  })
  it('never expires without exp', () => {
    assert.equal(statusAt(null, new Date('2999-01-01T00:00:00Z'), 30), 'valid')
  })
})

describe('monthBucket', () => {
  it('rolls over at UTC month start', () => {
    assert.equal(monthBucket(new Date('2026-11-30T23:59:59.999Z')), '2026-11')
    assert.equal(monthBucket(new Date('2026-12-01T00:00:00.000Z')), '2026-12')
    assert.equal(monthBucket(new Date('2026-12-31T23:30:00.000-02:00')), '2027-01', 'by UTC, not local time')
  })
})

describe('sealed license storage', () => {
  it('round-trips, with a fresh salt and nonce per write, bound to the tenant and the secret', () => {
    const a = seal(SECRET, 'acme', 'the.license.jwt')
    const b = seal(SECRET, 'acme', 'the.license.jwt')
    assert.notEqual(a, b)
    assert.ok(!a.includes('license'))
    assert.equal(unseal(SECRET, 'acme', a), 'the.license.jwt')
    assert.equal(unseal(SECRET, 'other', a), null, 'another tenant cannot open it')
    assert.equal(unseal('t'.repeat(40), 'acme', a), null, 'another secret cannot open it')
    const parts = a.split('.')
    parts[4] = Buffer.from('tampered!!').toString('base64url')
    assert.equal(unseal(SECRET, 'acme', parts.join('.')), null, 'tampered ciphertext fails authentication')
  })
})

describe('verifyLicense', () => {
  const issuer = newIssuer()
  it('returns the claims of an RS256 license, expired ones included', () => {
    const c = verifyLicense(issuer.sign({ edition: 'pro', limits: { object_count: 3 }, tenant: 'acme', exp: inDays(-5) }), issuer.publicKey)
    assert.equal(c.edition, 'pro')
    assert.equal(c.tenant, 'acme')
    assert.deepEqual(c.limits, { object_count: 3 })
    assert.ok(c.expiresAt !== null && c.expiresAt < new Date())
  })
  it('refuses RS512, PS256 and malformed claims', () => {
    assert.throws(() => verifyLicense(issuer.sign({}, { algorithm: 'RS512' }), issuer.publicKey), /RS512 is not accepted/)
    assert.throws(() => verifyLicense(issuer.sign({}, { algorithm: 'PS256' }), issuer.publicKey), /PS256 is not accepted/)
    assert.throws(() => verifyLicense(issuer.sign({ limits: { object_count: -1 } }), issuer.publicKey), /malformed/)
  })
})
