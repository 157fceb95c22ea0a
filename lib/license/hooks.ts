import type { ServiceContext } from '../context.js'
import type { Tx } from '../db.js'
import type { Change, InTransactionHook, WriteHooks, WriteSpec } from '../pipeline.js'
import { assertWritable, checkQuota, effectiveLicense, limitOf, monthlyDelta } from './service.js'
import { LIMITS } from './limits.js'
import { quotaStatementCheck } from './quota.js'

// The license's part of every write (lib/pipeline): refused while expired (before the
// transaction), the monthly usage delta recorded with the write's own rows, and the quota checked
// last inside the transaction, after the write's counter deltas are in. lib/modules.ts wires it.

/** The limit this write counts against under the tenant's license, or null for none. */
async function enforcedLimit (ctx: ServiceContext, spec: WriteSpec): Promise<{ code: string, limit: number } | null> {
  const code = spec.limit
  if (code === undefined || LIMITS[code] === undefined || ctx.config.license.publicKey === null) return null
  const limit = limitOf(await effectiveLicense(ctx), code)
  return limit === null ? null : { code, limit }
}

const quota: InTransactionHook = Object.assign(async (ctx: ServiceContext, tx: Tx, spec: WriteSpec, changes: Change[]) => {
  const enforced = await enforcedLimit(ctx, spec)
  if (enforced === null) return
  const { counter, monthly } = LIMITS[enforced.code]
  const own = changes.flatMap(c => c.counts ?? []).filter(d => d.counter === counter)
  const delta = own.reduce((n, d) => n + d.delta, 0)
  await checkQuota(ctx, tx, enforced.code, enforced.limit, delta, monthly ? (own[0]?.bucket ?? null) : null)
}, {
  // A one-statement write carries the shared path in its statement (quotaStatementCheck); a
  // monthly limit's own delta comes from the record hook, so such writes stay transactions.
  inStatement: async (ctx: ServiceContext, spec: WriteSpec) => {
    const enforced = await enforcedLimit(ctx, spec)
    if (enforced === null) return 'none' as const
    return LIMITS[enforced.code].monthly ? null : quotaStatementCheck(ctx.tenantId, enforced.code, enforced.limit)
  }
})

export const writeHooks: WriteHooks = {
  before: async (ctx, spec) => {
    if (spec.resource !== 'license') await assertWritable(ctx)
  },
  record: (_ctx, spec) => {
    const delta = spec.limit === undefined ? null : monthlyDelta(spec.limit, new Date())
    return delta === null ? [] : [{ counts: [delta] }]
  },
  inTransaction: quota
}
