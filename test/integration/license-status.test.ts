import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import '../../lib/modules.js'
import { createDb, type Db } from '../../lib/db.js'
import * as license from '../../lib/license/index.js'
import { newTenant, serviceContext } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'
import { newIssuer } from '../support/license.js'

describe('lib/license status over time (injected clock)', () => {
  let db: Db
  before(() => { db = createDb(TEST_DATABASE_URL, { poolMax: 4 }) })
  after(() => db.destroy())

  it('moves valid -> expiring_soon -> expired by time alone, and writes stop exactly at expiry', async () => {
    const issuer = newIssuer()
    const exp = new Date('2031-06-15T12:00:00.000Z')
    const env = { LICENSE_PUBLIC_KEY: issuer.publicKey, LICENSE_KEY: issuer.sign({ exp: exp.getTime() / 1000 }), LICENSE_EXPIRING_SOON_DAYS: '30' }
    const ctx = serviceContext(db, newTenant('clock'), ['owner'], env)
    const at = (iso: string) => new Date(iso)
    assert.equal((await license.getLicense(ctx, at('2031-05-16T11:59:59.999Z'))).status, 'valid')
    assert.equal((await license.getLicense(ctx, at('2031-05-16T12:00:00.000Z'))).status, 'expiring_soon')
    assert.equal((await license.getLicense(ctx, at('2031-06-15T11:59:59.999Z'))).status, 'expiring_soon')
    await license.assertWritable(ctx, at('2031-06-15T11:59:59.999Z'))
    assert.equal((await license.getLicense(ctx, at('2031-06-15T12:00:00.000Z'))).status, 'expired')
    await assert.rejects(license.assertWritable(ctx, at('2031-06-15T12:00:00.000Z')), { code: 'LICENSE_EXPIRED' })
    assert.equal(license.environmentLicenseStatus(ctx.config.license, at('2031-06-15T12:00:00.000Z')), 'expired')
  })

  it('gives the same deployment fingerprint to every pool on the database', async () => {
    const other = createDb(TEST_DATABASE_URL, { poolMax: 1 })
    try {
      assert.equal(await license.deploymentFingerprint(db), await license.deploymentFingerprint(other))
    } finally {
      await other.destroy()
    }
  })
})
