import type { ServiceContext } from '../context.js'
import type { Tx } from '../db.js'
import { AppError } from '../errors.js'
import { licenseLimitExceededTotal } from '../metrics.js'
import * as audit from '../audit/index.js'
import { LIMITS } from './limits.js'
import * as sql from './sql.js'
import type { StatementCheck } from '../pipeline.js'

/**
 * Refuses the write in `tx` when it takes `limitCode` past the license's limit (README
 * "Quotas"). The write's own delta (`own`, at most 1) is already in `tx`; `bucket` is the month
 * of a monthly limit (that of the write's own delta), null for a live-record one. Exactly-N under any
 * concurrency: a write passes on the shared path only when the total it sees plus as many other
 * holders of the lock as the server admits (each an uncommitted write adding at most 1) stays
 * within the limit; otherwise (within max_connections of the limit) it takes the exact path
 * (exclusive lock, exact total), and only that path refuses.
 */
export async function checkQuota (ctx: ServiceContext, tx: Tx, limitCode: string, limit: number, own: number, bucket: string | null): Promise<void> {
  const def = LIMITS[limitCode]
  if (def === undefined || own <= 0) return
  const seen = await sql.sharedCheck(tx, ctx.tenantId, def.counter, bucket)
  if (seen.total + (seen.maxHolders - 1) * (def.maxUnitsPerWrite ?? 1) <= limit) return
  const total = await sql.exclusiveTotal(tx, ctx.tenantId, def.counter, bucket)
  if (total <= limit) return
  refuse(ctx, tx, limitCode, limit, total - own)
}

/**
 * 403 LICENSE_LIMIT_EXCEEDED, counted, and audited (SPEC 6) as a refusal (lib/audit
 * recordForContext): `tx` rolls back with the refused write (inside an automation run, the run's
 * whole transaction), so the event is written on the pool once `tx` has ended, before the caller
 * sees the 403 or the run's failure; not while `tx` is open, which holds a pooled connection and
 * the counter's exclusive lock (with every pooled connection held by writers queued on that lock,
 * waiting for another would wait forever).
 */
function refuse (ctx: ServiceContext, tx: Tx, limitCode: string, limit: number, current: number): never {
  licenseLimitExceededTotal.inc({ limit_code: limitCode })
  void audit.recordForContext(ctx, {
    type: 'license.limit_exceeded',
    resourceType: 'license',
    resourceId: limitCode,
    data: { limitCode, limit, current }
  }, tx).catch(err => ctx.log.error({ err }, 'could not audit a refused write'))
  throw new AppError('LICENSE_LIMIT_EXCEEDED', `the license allows ${limit} for ${limitCode}; the tenant is at ${current}`, { limitCode, limit, current })
}

/**
 * The shared path inside a one-statement write (lib/pipeline StatementCheck): the function of
 * migration 202611240600 with the write's own units of `counter`. Far from the limit it passes
 * (and folds the counter when its rows pile up, migration 202611250100); near it, it raises and
 * the write runs as a transaction through `checkQuota` (the exact path).
 */
export function quotaStatementCheck (tenantId: string, limitCode: string, limit: number): StatementCheck {
  const def = LIMITS[limitCode]
  // The function allows 1 unit per other holder; a limit whose writes add more lowers the bound
  // by the difference for each of them.
  const extra = (def.maxUnitsPerWrite ?? 1) - 1
  return {
    name: 'license.quota',
    sql: `license_quota_shared(?, ?, ?::bigint - (current_setting('max_connections')::bigint + current_setting('max_prepared_transactions')::bigint - 1) * ?::bigint,
      (SELECT coalesce(sum(delta), 0) FROM deltas WHERE counter = ?)::bigint)`,
    bindings: [tenantId, def.counter, limit, extra, def.counter]
  }
}
