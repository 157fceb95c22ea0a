import { randomUUID } from 'node:crypto'
import type { ServiceContext } from '../context.js'
import { AppError, notFound } from '../errors.js'
import { isUuid, withTransaction } from '../db.js'
import { page, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import * as sql from './sql.js'
import { toRunDetail, toRunDto, type RunDto } from './dto.js'
import { queueRun } from './trigger.js'

// Reading runs, and replaying a failed one: a new run of the rule's live version on the same
// input, linked to the old one (replayOf), never a second attempt of the old run.

async function mustHaveRule (ctx: ServiceContext, ruleId: string): Promise<sql.RuleWithContent> {
  if (!isUuid(ruleId)) notFound('automation rule', ruleId)
  return (await sql.findRule(ctx.db, ctx.tenantId, ruleId)) ?? notFound('automation rule', ruleId)
}

export async function listRuns (ctx: ServiceContext, ruleId: string, q: sql.RunFilter): Promise<Page<RunDto>> {
  await access.authorize(ctx, 'automationRules', 'read')
  await mustHaveRule(ctx, ruleId)
  const { rows, total } = await sql.listRuns(ctx.db, ctx.tenantId, ruleId, q)
  return page(rows.map(toRunDto), q.limit, q.offset, total)
}

export async function getRun (ctx: ServiceContext, ruleId: string, runId: string) {
  await access.authorize(ctx, 'automationRules', 'read')
  if (!isUuid(ruleId) || !isUuid(runId)) notFound('automation run', runId)
  const run = (await sql.findRun(ctx.db, ctx.tenantId, ruleId, runId)) ?? notFound('automation run', runId)
  return toRunDetail(run)
}

export async function replayRun (ctx: ServiceContext, ruleId: string, runId: string): Promise<RunDto> {
  await access.authorize(ctx, 'automationRules', 'execute')
  const rule = await mustHaveRule(ctx, ruleId)
  if (!isUuid(runId)) notFound('automation run', runId)
  const old = (await sql.findRun(ctx.db, ctx.tenantId, ruleId, runId)) ?? notFound('automation run', runId)
  if (old.status !== 'failed') throw new AppError('INVALID_TRANSITION', `only a failed run can be replayed; this one is ${old.status}`, { status: old.status })
  if (rule.status === 'draft' || rule.live_version === null) throw new AppError('INVALID_TRANSITION', 'the rule is a draft; publish it before replaying its runs', { status: rule.status })
  const id = await withTransaction(ctx.db, tx => queueRun(tx, ctx.tenantId, ctx.jobs, {
    ruleId, ruleVersion: rule.live_version!, key: `replay:${runId}:${randomUUID()}`, depth: old.depth, input: old.input, replayOf: runId,
    trigger: { ...old.trigger, replayOf: runId, replayedBy: ctx.actor.sub }
  }))
  return toRunDto((await sql.findRun(ctx.db, ctx.tenantId, ruleId, id))!)
}
