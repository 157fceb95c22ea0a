import type { ServiceContext } from '../context.js'
import { AppError, notFound, validationError } from '../errors.js'
import { isUuid, type Queryable, type Tx } from '../db.js'
import { parse } from '../validation.js'
import { page, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import { runWrite, type Change } from '../pipeline.js'
import * as counters from '../counters/index.js'
import * as objectTypes from '../object-types/index.js'
import { AUTOMATION_SCHEDULE_SYNC } from '../queues/contracts.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import { checkRuleContent, type RuleContent } from './definition.js'
import { toRegistryVersion, toRuleDto, type RuleDto } from './dto.js'
import { issueSigningSecret, issueWebhookToken } from './secrets.js'

// Rules CRUD and lifecycle (docs/behaviour.md "Automation"): draft never runs; publish makes the latest
// version live as sandbox or active; PATCH of a live rule opens a draft N+1 while the live version
// keeps running; deactivate returns the rule to draft; delete removes it (runs stay readable).

type PatchInput = Partial<Omit<RuleContent, 'trigger' | 'effect'>> & { trigger?: Part, effect?: Part }
type Part = { type?: string } & Record<string, unknown>

/**
 * PATCH of a trigger or an effect: the fields given replace those of the same name and a null
 * removes one, the others are kept; a different `type` replaces the whole part.
 */
function mergePart<T extends { type: string }> (current: T, given: Part | undefined): T {
  if (given === undefined) return current
  const base: Record<string, unknown> = given.type !== undefined && given.type !== current.type ? {} : { ...current }
  for (const [k, v] of Object.entries(given)) {
    if (v === null) delete base[k]
    else base[k] = v
  }
  return base as T
}

function mustFind (r: sql.RuleWithContent | null, id: string): sql.RuleWithContent {
  return r ?? notFound('automation rule', id)
}

function audited (type: string, id: string, data: Record<string, unknown>): Change {
  return { audit: { type, resourceType: 'automationRule', resourceId: id, data } }
}

async function reread (ctx: ServiceContext, db: Queryable, id: string): Promise<RuleDto> {
  return toRuleDto(mustFind(await sql.findRule(db, ctx.tenantId, id), id))
}

function slugOf (c: RuleContent): string | null {
  return c.trigger.type === 'webhook' ? c.trigger.slug : null
}

/** Secrets a rule needs and does not have yet; each is shown once, in the answer that issued it. */
function missingSecrets (tenantId: string, ruleId: string, c: RuleContent, have: { token_hash: string | null, signing_secret: string | null }) {
  const token = c.trigger.type === 'webhook' && have.token_hash === null ? issueWebhookToken(tenantId, ruleId) : null
  const secret = c.effect.type === 'webhook' && have.signing_secret === null ? issueSigningSecret() : null
  return {
    row: { ...(token ? { token_hash: token.hash } : {}), ...(secret ? { signing_secret: secret } : {}) },
    shown: { ...(token ? { webhookToken: token.token } : {}), ...(secret ? { signingSecret: secret } : {}) }
  }
}

/** An object.event trigger's typeId names a type of this tenant (inside the write: a refusal writes nothing). */
async function checkReferences (tx: Tx, tenantId: string, c: RuleContent): Promise<void> {
  if (c.trigger.type === 'object.event' && c.trigger.typeId !== undefined) await objectTypes.assertTypeInTenant(tx, tenantId, c.trigger.typeId, 'trigger.typeId')
}

/** Asks the worker to bring the rule's pg-boss schedule in line (inside the write's transaction). */
async function syncSchedule (ctx: ServiceContext, tx: Tx, ruleId: string, ...contents: Array<RuleContent | null>): Promise<void> {
  if (!contents.some(c => c?.trigger.type === 'schedule') || ctx.jobs === null) return
  await ctx.jobs.send(AUTOMATION_SCHEDULE_SYNC.name, { tenantId: ctx.tenantId, ruleId }, { db: tx })
}

export async function createRule (ctx: ServiceContext, body: unknown): Promise<RuleDto> {
  const content = parse<RuleContent>(schema.CreateRuleBody, body)
  checkRuleContent(content, ctx.config.webhookAllowPrivateNetworks)
  return runWrite(ctx, { resource: 'automationRules', action: 'write', limit: 'automation_rule_count' }, async w => {
    await checkReferences(w.tx, ctx.tenantId, content)
    const row = await sql.insertRule(w.tx, ctx.tenantId, { slug: slugOf(content), token_hash: null, signing_secret: null })
    const secrets = missingSecrets(ctx.tenantId, row.id, content, row)
    if (Object.keys(secrets.row).length > 0) await sql.updateRule(w.tx, ctx.tenantId, row.id, secrets.row)
    await sql.insertVersion(w.tx, ctx.tenantId, row.id, 1, content, ctx.actor.sub)
    w.record({ ...audited('automation.rule.created', row.id, { name: content.name, trigger: content.trigger.type, effect: content.effect.type }), counts: [{ counter: counters.AUTOMATION_RULES, delta: 1 }] })
    return { ...await reread(ctx, w.tx, row.id), ...secrets.shown }
  })
}

export async function getRule (ctx: ServiceContext, id: string): Promise<RuleDto> {
  await access.authorize(ctx, 'automationRules', 'read')
  if (!isUuid(id)) notFound('automation rule', id)
  return reread(ctx, ctx.db, id)
}

export async function listRules (ctx: ServiceContext, q: sql.RuleFilter): Promise<Page<RuleDto>> {
  await access.authorize(ctx, 'automationRules', 'read')
  const { rows, total } = await sql.listRules(ctx.db, ctx.tenantId, q)
  return page(rows.map(toRuleDto), q.limit, q.offset, total)
}

/** Edits the latest version in place while it is a draft; a live latest version gets draft N+1. */
export async function patchRule (ctx: ServiceContext, id: string, body: unknown): Promise<RuleDto> {
  const input = parse<PatchInput>(schema.PatchRuleBody, body)
  if (!isUuid(id)) notFound('automation rule', id)
  return runWrite(ctx, { resource: 'automationRules', action: 'write' }, async w => {
    const r = mustFind(await sql.findRule(w.tx, ctx.tenantId, id, true), id)
    const current = r.latest_content as RuleContent
    const content = { ...current, ...input, trigger: mergePart(current.trigger, input.trigger), effect: mergePart(current.effect, input.effect) } as RuleContent
    if (typeof content.trigger.type !== 'string') throw validationError('trigger.type', 'is required')
    if (typeof content.effect.type !== 'string') throw validationError('effect.type', 'is required')
    for (const k of ['description', 'match', 'condition'] as const) if (content[k] === null) delete content[k]
    checkRuleContent(content, ctx.config.webhookAllowPrivateNetworks)
    await checkReferences(w.tx, ctx.tenantId, content)
    let version = r.latest_version
    if (r.latest_status === 'draft') await sql.updateVersionContent(w.tx, ctx.tenantId, id, version, content)
    else await sql.insertVersion(w.tx, ctx.tenantId, id, ++version, content, ctx.actor.sub)
    const secrets = missingSecrets(ctx.tenantId, id, content, r)
    await sql.updateRule(w.tx, ctx.tenantId, id, { latest_version: version, slug: slugOf(content), ...secrets.row })
    w.record(audited('automation.rule.updated', id, { version, fields: Object.keys(input) }))
    return { ...await reread(ctx, w.tx, id), ...secrets.shown }
  })
}

const RANK = { draft: 0, sandbox: 1, active: 2 } as const

/** Makes the latest version live as sandbox or active. Nothing new to publish, or backwards: 409. */
export async function publishRule (ctx: ServiceContext, id: string, body: unknown): Promise<RuleDto> {
  const { to = 'active' } = parse<{ to?: 'sandbox' | 'active' }>(schema.PublishRuleBody, body ?? {})
  if (!isUuid(id)) notFound('automation rule', id)
  return runWrite(ctx, { resource: 'automationRules', action: 'publish' }, async w => {
    const r = mustFind(await sql.findRule(w.tx, ctx.tenantId, id, true), id)
    const newer = r.live_version !== r.latest_version
    if (RANK[to] < RANK[r.status] || (RANK[to] === RANK[r.status] && !newer)) {
      throw new AppError('INVALID_TRANSITION', `rule is ${r.status} at version ${r.live_version ?? r.latest_version}; publish moves forward to sandbox or active, or makes a newer version live (deactivate returns it to draft)`,
        { from: r.status, to, version: r.latest_version })
    }
    await sql.setVersionStatus(w.tx, ctx.tenantId, id, r.latest_version, to)
    await sql.updateRule(w.tx, ctx.tenantId, id, { status: to, live_version: r.latest_version, live_slug: slugOf(r.latest_content), actor_roles: ctx.actor.roles })
    await syncSchedule(ctx, w.tx, id, r.live_content, r.latest_content)
    w.record(audited('automation.rule.published', id, { version: r.latest_version, from: r.status, to }))
    return reread(ctx, w.tx, id)
  })
}

export async function deactivateRule (ctx: ServiceContext, id: string): Promise<RuleDto> {
  if (!isUuid(id)) notFound('automation rule', id)
  return runWrite(ctx, { resource: 'automationRules', action: 'publish' }, async w => {
    const r = mustFind(await sql.findRule(w.tx, ctx.tenantId, id, true), id)
    if (r.status === 'draft') throw new AppError('INVALID_TRANSITION', 'rule is already a draft', { from: 'draft', to: 'draft' })
    await sql.updateRule(w.tx, ctx.tenantId, id, { status: 'draft', live_version: null, live_slug: null })
    await syncSchedule(ctx, w.tx, id, r.live_content)
    w.record(audited('automation.rule.deactivated', id, { version: r.live_version, from: r.status }))
    return reread(ctx, w.tx, id)
  })
}

export async function deleteRule (ctx: ServiceContext, id: string): Promise<void> {
  if (!isUuid(id)) notFound('automation rule', id)
  await runWrite(ctx, { resource: 'automationRules', action: 'write' }, async w => {
    const r = mustFind(await sql.findRule(w.tx, ctx.tenantId, id, true), id)
    await sql.updateRule(w.tx, ctx.tenantId, id, { status: 'draft', live_version: null, live_slug: null, slug: null, token_hash: null, deleted_at: w.tx.raw('now()') })
    await syncSchedule(ctx, w.tx, id, r.live_content)
    w.record({ ...audited('automation.rule.deleted', id, {}), counts: [{ counter: counters.AUTOMATION_RULES, delta: -1 }] })
  })
}

/** Issues a new webhook token and signing secret (the old ones stop working at commit). */
export async function rotateSecrets (ctx: ServiceContext, id: string): Promise<{ id: string, webhookToken?: string, signingSecret?: string }> {
  if (!isUuid(id)) notFound('automation rule', id)
  return runWrite(ctx, { resource: 'automationRules', action: 'write' }, async w => {
    const r = mustFind(await sql.findRule(w.tx, ctx.tenantId, id, true), id)
    const kinds = [r.latest_content, r.live_content].filter((c): c is RuleContent => c !== null)
    const secrets = missingSecrets(ctx.tenantId, id, {
      ...r.latest_content,
      trigger: kinds.find(c => c.trigger.type === 'webhook')?.trigger ?? r.latest_content.trigger,
      effect: kinds.find(c => c.effect.type === 'webhook')?.effect ?? r.latest_content.effect
    }, { token_hash: null, signing_secret: null })
    if (Object.keys(secrets.row).length === 0) throw new AppError('BAD_REQUEST', 'this rule has neither a webhook trigger nor a webhook effect, so it has nothing to rotate', {})
    await sql.updateRule(w.tx, ctx.tenantId, id, secrets.row)
    w.record(audited('automation.rule.secrets_rotated', id, { rotated: Object.keys(secrets.shown) }))
    return { id, ...secrets.shown }
  })
}

export async function ruleRegistry (ctx: ServiceContext, id: string) {
  await access.authorize(ctx, 'automationRules', 'read')
  if (!isUuid(id)) notFound('automation rule', id)
  mustFind(await sql.findRule(ctx.db, ctx.tenantId, id), id)
  const versions = await sql.listVersions(ctx.db, ctx.tenantId, id)
  return { entityType: 'automation-rules', entityId: id, versions: versions.map(toRegistryVersion) }
}
