import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createDb, type Db } from '../../lib/db.js'
import { announce, startSettingsFeed, TenantSettingsCache } from '../../lib/settings/index.js'
import { newTenant, silentLog } from '../support/harness.js'
import { TEST_DATABASE_URL } from '../support/env.js'

// lib/settings TenantSettingsCache: a value loaded while its tenant changed is not kept, and one
// loaded while other tenants changed is (a busy database announces changes all the time: the
// layers' change counters must still be served from memory).

describe('TenantSettingsCache', () => {
  let db: Db
  let feed: { stop: () => Promise<void> }
  before(async () => {
    db = createDb(TEST_DATABASE_URL, { poolMax: 2 })
    feed = await startSettingsFeed(db, TEST_DATABASE_URL, silentLog)
  })
  after(async () => {
    await feed.stop()
    await db.destroy()
  })

  /** Loads `tenant`'s value while `during` runs inside the load; then how many loads a second get makes. */
  async function loadsAfter (tenant: string, during: () => void): Promise<number> {
    const cache = new TenantSettingsCache<number>('layers')
    let loads = 0
    await cache.get(db, tenant, async () => { loads++; during(); return loads })
    await cache.get(db, tenant, async () => { loads++; return loads })
    return loads
  }

  it('keeps a value loaded while other tenants changed', async () => {
    const tenant = newTenant('cache')
    assert.equal(await loadsAfter(tenant, () => { for (let i = 0; i < 5; i++) announce(db, 'layers', newTenant('other'), silentLog) }), 1)
  })

  it('does not keep a value loaded while its own tenant changed', async () => {
    const tenant = newTenant('cache')
    assert.equal(await loadsAfter(tenant, () => { announce(db, 'layers', tenant, silentLog) }), 2)
  })

  it('drops a tenant\'s value when it changes, and only that tenant\'s', async () => {
    const cache = new TenantSettingsCache<string>('layers')
    const [a, b] = [newTenant('a'), newTenant('b')]
    await cache.get(db, a, async () => 'a1')
    await cache.get(db, b, async () => 'b1')
    announce(db, 'layers', a, silentLog)
    assert.equal(await cache.get(db, a, async () => 'a2'), 'a2')
    assert.equal(await cache.get(db, b, async () => 'b2'), 'b1')
  })
})
