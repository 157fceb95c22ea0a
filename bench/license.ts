import { generateKeyPairSync } from 'node:crypto'
import jwt from 'jsonwebtoken'
import '../lib/modules.js'
import type { Db } from '../lib/db.js'
import { createLogger } from '../lib/log.js'
import { Sequencer } from '../lib/audit/index.js'
import * as objects from '../lib/objects/index.js'
import * as objectTypes from '../lib/object-types/index.js'
import * as license from '../lib/license/index.js'
import { startSettingsFeed } from '../lib/settings/index.js'
import { benchContext, benchTenant, compare, row, throughput, workerChores } from './support.js'

// The cost of licensing on the write pipeline: object creates of a tenant whose installed license
// sets limits (object_count far from reached, so the quota check takes its shared path) against
// the development edition (no public key: no check at all), measured in the same run.
export async function benchLicense (db: Db, databaseUrl: string, rounds: number, print: (line: string) => void): Promise<void> {
  const feed = await startSettingsFeed(db, databaseUrl, createLogger('bench', 'error'))
  const stopChores = workerChores(db)
  const sequencer = new Sequencer(db, err => { throw err })
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } })
  const env = { LICENSE_PUBLIC_KEY: publicKey, LICENSE_STORAGE_SECRET: 'bench-storage-secret-0123456789abcdef' }
  try {
    const setup = async (tenant: string, licensed: boolean) => {
      const ctx = benchContext(db, tenant, licensed ? env : {}, sequencer)
      if (licensed) {
        const limits = { object_count: 1_000_000_000, object_type_count: 100, relation_count: 1_000_000 }
        await license.installLicense(ctx, { licenseKey: jwt.sign({ edition: 'bench', tenant, limits }, privateKey, { algorithm: 'RS256', expiresIn: '1d' }) })
      }
      const typeId = (await objectTypes.createObjectType(ctx, { key: 'site', name: 'Site' })).id
      await objectTypes.publishObjectType(ctx, typeId, { to: 'published' })
      return (c: number, n: number) => () => throughput(n, c, async i => {
        await objects.createObject(ctx, { typeId, attributes: { name: `site ${i}` }, geometry: { type: 'Point', coordinates: [13 + i / 1e6, 52] } })
      })
    }
    const licensed = await setup(benchTenant('licensed'), true)
    const development = await setup(benchTenant('dev'), false)
    for (const [c, n] of [[1, 300], [16, 1500]] as const) {
      print(row(`pipeline create, license+limits vs dev, c${c}`, await compare(rounds, licensed(c, n), development(c, n))))
    }
  } finally {
    stopChores()
    await sequencer.stop()
    await feed.stop()
  }
}
