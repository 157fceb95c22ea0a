import type { ServiceContext } from '../context.js'
import { notFound } from '../errors.js'
import { isUuid } from '../db.js'
import { parse } from '../validation.js'
import { page, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import { runWrite, type Change } from '../pipeline.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import { checkRuleDefinition, type RuleContent, type RuleDefinition, type RuleKind } from './definition.js'
import { toRegistryVersion, toRuleDto, type RuleDto } from './dto.js'
import * as versioning from '../versioning/index.js'

interface CreateInput { key: string, name: string, kind: RuleKind, definition: Record<string, unknown> }
interface PatchInput { name?: string, definition?: Record<string, unknown> }

function mustFind (r: sql.RuleWithLatest | null, id: string): sql.RuleWithLatest {
  return r ?? notFound('rule', id)
}

function latestOf (r: sql.RuleWithLatest): versioning.Latest {
  return { id: r.id, version: r.latest_version, status: r.latest_status }
}

function audited (type: string, r: { id: string, key: string }, data: Record<string, unknown>): Change {
  return { audit: { type, resourceType: 'rule', resourceId: r.id, data: { key: r.key, ...data } } }
}

async function reread (ctx: ServiceContext, db: Parameters<typeof sql.findRule>[0], id: string): Promise<RuleDto> {
  return toRuleDto(mustFind(await sql.findRule(db, ctx.tenantId, id), id))
}

export async function createRule (ctx: ServiceContext, body: unknown): Promise<RuleDto> {
  const input = parse<CreateInput>(schema.CreateRuleBody, body)
  checkRuleDefinition(input.kind, input.definition)
  const content: RuleContent = { name: input.name, definition: input.definition as unknown as RuleDefinition }
  return runWrite(ctx, { resource: 'rules', action: 'write' }, async w => {
    const row = await sql.insertRule(w.tx, ctx.tenantId, input.key, input.kind)
    await sql.versions.insert(w.tx, ctx.tenantId, row.id, 1, content, ctx.actor.sub)
    w.record(audited('rule.created', row, { kind: row.kind, version: 1 }))
    return reread(ctx, w.tx, row.id)
  })
}

export async function getRule (ctx: ServiceContext, id: string): Promise<RuleDto> {
  await access.authorize(ctx, 'rules', 'read')
  if (!isUuid(id)) notFound('rule', id)
  return reread(ctx, ctx.db, id)
}

export async function listRules (ctx: ServiceContext, q: sql.RuleFilter): Promise<Page<RuleDto>> {
  await access.authorize(ctx, 'rules', 'read')
  const { rows, total } = await sql.listRules(ctx.db, ctx.tenantId, q)
  return page(rows.map(toRuleDto), q.limit, q.offset, total)
}

/**
 * Edits the latest version in place while it is draft or sandbox; a published latest version
 * gets a new draft N+1, so guards keep evaluating the published one until the next publish.
 */
export async function patchRule (ctx: ServiceContext, id: string, body: unknown): Promise<RuleDto> {
  const input = parse<PatchInput>(schema.PatchRuleBody, body)
  if (!isUuid(id)) notFound('rule', id)
  return runWrite(ctx, { resource: 'rules', action: 'write' }, async w => {
    const r = mustFind(await sql.findRule(w.tx, ctx.tenantId, id, true), id)
    if (input.definition !== undefined) checkRuleDefinition(r.kind, input.definition)
    const content: RuleContent = {
      name: input.name ?? r.latest_content.name,
      definition: (input.definition as unknown as RuleDefinition | undefined) ?? r.latest_content.definition
    }
    const version = await versioning.saveEdit(sql.versions, w.tx, ctx.tenantId, latestOf(r), content, ctx.actor.sub)
    w.record(audited('rule.updated', r, { version, fields: Object.keys(input) }))
    return reread(ctx, w.tx, id)
  })
}

/** draft -> sandbox -> published; draft -> published passes sandbox (both stamps are set). */
export async function publishRule (ctx: ServiceContext, id: string, body: unknown): Promise<RuleDto> {
  const { to = 'published' } = parse<{ to?: 'sandbox' | 'published' }>(versioning.PublishBody, body ?? {})
  if (!isUuid(id)) notFound('rule', id)
  return runWrite(ctx, { resource: 'rules', action: 'publish' }, async w => {
    const r = mustFind(await sql.findRule(w.tx, ctx.tenantId, id, true), id)
    const from = r.latest_status
    await versioning.advance(sql.versions, w.tx, ctx.tenantId, 'rule', latestOf(r), to)
    w.record(audited('rule.published', r, { version: r.latest_version, from, to }))
    return reread(ctx, w.tx, id)
  })
}

export async function ruleRegistry (ctx: ServiceContext, id: string) {
  await access.authorize(ctx, 'rules', 'read')
  if (!isUuid(id)) notFound('rule', id)
  const r = mustFind(await sql.findRule(ctx.db, ctx.tenantId, id), id)
  const versions = await sql.versions.list(ctx.db, ctx.tenantId, id)
  return { entityType: 'rules', entityId: id, versions: versions.map(v => toRegistryVersion(r.kind, v)) }
}
