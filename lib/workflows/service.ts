import type { ServiceContext } from '../context.js'
import type { Queryable } from '../db.js'
import { AppError, notFound, validationError } from '../errors.js'
import { isUuid } from '../db.js'
import { parse } from '../validation.js'
import { page, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import * as rules from '../rules/index.js'
import { runWrite, type Change } from '../pipeline.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import { checkWorkflowDefinition, normalizeDefinition, ruleReferences, type WorkflowDefinition } from './definition.js'
import { toRegistryVersion, toWorkflowDto, type WorkflowDto } from './dto.js'

type DefinitionInput = Partial<WorkflowDefinition>

function mustFind (w: sql.WorkflowWithLatest | null, id: string): sql.WorkflowWithLatest {
  return w ?? notFound('workflow', id)
}

function audited (type: string, w: { id: string, key: string }, data: Record<string, unknown>): Change {
  return { audit: { type, resourceType: 'workflow', resourceId: w.id, data: { key: w.key, ...data } } }
}

/** Merges, normalises and checks a definition: VALIDATION_ERROR names the path of the first fault. */
function buildDefinition (base: WorkflowDefinition | null, input: DefinitionInput): WorkflowDefinition {
  const def = normalizeDefinition({
    name: input.name ?? base?.name ?? '',
    initialState: input.initialState ?? base?.initialState ?? '',
    states: input.states ?? base?.states ?? [],
    transitions: input.transitions ?? base?.transitions ?? []
  })
  checkWorkflowDefinition(def)
  return def
}

/** Rule guards must name rules of this tenant (any status: an unpublished one fails closed at run time). */
async function checkRuleReferences (db: Queryable, tenantId: string, def: WorkflowDefinition): Promise<void> {
  const refs = ruleReferences(def)
  const found = new Set(await rules.existingRuleIds(db, tenantId, [...new Set(refs.map(r => r.ruleId))]))
  const missing = refs.find(r => !found.has(r.ruleId))
  if (missing) throw validationError(missing.path, `rule ${missing.ruleId} does not exist in this tenant`)
}

export async function createWorkflow (ctx: ServiceContext, body: unknown): Promise<WorkflowDto> {
  const input = parse<DefinitionInput & { key: string }>(schema.CreateWorkflowBody, body)
  const def = buildDefinition(null, input)
  return runWrite(ctx, { resource: 'workflows', action: 'write' }, async w => {
    await checkRuleReferences(w.tx, ctx.tenantId, def)
    const row = await sql.insertWorkflow(w.tx, ctx.tenantId, input.key)
    await sql.insertVersion(w.tx, ctx.tenantId, row.id, 1, def, ctx.actor.sub)
    w.record(audited('workflow.created', row, { version: 1 }))
    return toWorkflowDto({ ...row, definition: def })
  })
}

export async function getWorkflow (ctx: ServiceContext, id: string): Promise<WorkflowDto> {
  await access.authorize(ctx, 'workflows', 'read')
  if (!isUuid(id)) notFound('workflow', id)
  return toWorkflowDto(mustFind(await sql.findWorkflow(ctx.db, ctx.tenantId, id), id))
}

export async function listWorkflows (ctx: ServiceContext, q: { limit: number, offset: number, key?: string }): Promise<Page<WorkflowDto>> {
  await access.authorize(ctx, 'workflows', 'read')
  const { rows, total } = await sql.listWorkflows(ctx.db, ctx.tenantId, q)
  return page(rows.map(toWorkflowDto), q.limit, q.offset, total)
}

/**
 * Every PATCH is version N+1, effective at once: objects follow the latest version from their
 * next transition or explain. `ifMatch` (optional) is the version the caller edited.
 */
export async function patchWorkflow (ctx: ServiceContext, id: string, body: unknown, ifMatch: number | null): Promise<WorkflowDto> {
  const input = parse<DefinitionInput>(schema.PatchWorkflowBody, body)
  if (!isUuid(id)) notFound('workflow', id)
  return runWrite(ctx, { resource: 'workflows', action: 'write' }, async w => {
    const current = mustFind(await sql.findWorkflow(w.tx, ctx.tenantId, id, true), id)
    if (ifMatch !== null && ifMatch !== current.latest_version) {
      throw new AppError('VERSION_CONFLICT', `workflow is at version ${current.latest_version}, not ${ifMatch}`, { currentVersion: current.latest_version })
    }
    const def = buildDefinition(current.definition, input)
    await checkRuleReferences(w.tx, ctx.tenantId, def)
    const version = current.latest_version + 1
    await sql.insertVersion(w.tx, ctx.tenantId, id, version, def, ctx.actor.sub)
    await sql.setLatestVersion(w.tx, ctx.tenantId, id, version)
    w.record(audited('workflow.updated', current, { version, fields: Object.keys(input) }))
    return toWorkflowDto(mustFind(await sql.findWorkflow(w.tx, ctx.tenantId, id), id))
  })
}

export async function workflowRegistry (ctx: ServiceContext, id: string) {
  await access.authorize(ctx, 'workflows', 'read')
  if (!isUuid(id)) notFound('workflow', id)
  mustFind(await sql.findWorkflow(ctx.db, ctx.tenantId, id), id)
  const versions = await sql.listVersions(ctx.db, ctx.tenantId, id)
  return { entityType: 'workflows', entityId: id, versions: versions.map(toRegistryVersion) }
}
