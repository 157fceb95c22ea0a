import { writeHooks } from '../pipeline.js'
import { queryHooks } from '../queries/index.js'
import { automationHooks } from '../automation/index.js'
import { assertFeature, assertWritable, checkQuota, countQueryRun, effectiveLicense, limitOf, monthlyDelta } from './service.js'
import { LIMITS } from './limits.js'

// The license's part of every write (lib/pipeline): refused while expired (before the
// transaction), the monthly usage delta recorded with the write's own rows, and the quota checked
// last inside the transaction, after the write's counter deltas are in. Query runs are counted
// through lib/queries' hook; the automation switch through lib/automation's. Wired once by lib/modules.ts.

writeHooks.before.push(async (ctx, spec) => {
  if (spec.resource !== 'license') await assertWritable(ctx)
})

writeHooks.record.push((_ctx, spec) => {
  const delta = spec.limit === undefined ? null : monthlyDelta(spec.limit, new Date())
  return delta === null ? [] : [{ counts: [delta] }]
})

writeHooks.inTransaction.push(async (ctx, tx, spec, changes) => {
  const code = spec.limit
  if (code === undefined || LIMITS[code] === undefined || ctx.config.license.publicKey === null) return
  const limit = limitOf(await effectiveLicense(ctx), code)
  if (limit === null) return
  const { counter, monthly } = LIMITS[code]
  const own = changes.flatMap(c => c.counts ?? []).filter(d => d.counter === counter)
  const delta = own.reduce((n, d) => n + d.delta, 0)
  await checkQuota(ctx, tx, code, limit, delta, monthly ? (own[0]?.bucket ?? null) : null)
})

queryHooks.beforeRun.push(ctx => countQueryRun(ctx))

// The webhook ingress authenticates by the rule's token, not through a RouteSpec with `feature`,
// and runs execute on the worker: both ask here whether the tenant's license has automation on.
automationHooks.tenantGate.push(ctx => assertFeature(ctx, 'automation'))
