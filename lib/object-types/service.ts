import type { ServiceContext } from '../context.js'
import { AppError, notFound, validationError } from '../errors.js'
import { isUuid, withCallerCost, type Queryable, type Tx } from '../db.js'
import { parse } from '../validation.js'
import { page, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import { runWrite } from '../pipeline.js'
import * as counters from '../counters/index.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import type { VersionRow } from './sql.js'
import { checkDefinition, type Fault, type TypeDefinition } from './definition.js'
import { checkDocumentOffThread } from './evaluation.js'
import { toObjectTypeDto, type ObjectTypeDto } from './dto.js'
import { forgetPublished } from './published-cache.js'
import * as versioning from '../versioning/index.js'

type DefinitionInput = Partial<{
  name: string
  description: string | null
  attributeSchema: Record<string, unknown> | null
  geometry: { required?: boolean, types?: string[], makeValid?: boolean }
  validationRules: TypeDefinition['validationRules']
  workflowId: string | null
  publicIdTemplate: string | null
}>

function mergeDefinition (base: TypeDefinition | null, input: DefinitionInput): TypeDefinition {
  return {
    name: input.name ?? base?.name ?? '',
    description: input.description !== undefined ? input.description : base?.description ?? null,
    attributeSchema: input.attributeSchema !== undefined ? input.attributeSchema : base?.attributeSchema ?? null,
    geometry: {
      required: input.geometry?.required ?? base?.geometry.required ?? false,
      types: input.geometry?.types ?? base?.geometry.types ?? [],
      makeValid: input.geometry?.makeValid ?? base?.geometry.makeValid ?? false
    },
    validationRules: input.validationRules ?? base?.validationRules ?? [],
    workflowId: input.workflowId !== undefined ? input.workflowId : base?.workflowId ?? null,
    publicIdTemplate: input.publicIdTemplate !== undefined ? input.publicIdTemplate : base?.publicIdTemplate ?? null
  }
}

async function checkReferences (ctx: ServiceContext, tx: Tx, def: TypeDefinition): Promise<void> {
  if (def.workflowId !== null && !(await ctx.hooks.workflowExists(ctx, tx, def.workflowId))) {
    throw validationError('workflowId', `workflow ${def.workflowId} does not exist in this tenant`)
  }
}

/**
 * A reference to a type from another module (a layer's filter, an automation rule's trigger), run
 * inside the referring write so a refusal writes nothing: 400 naming `field` unless the type is
 * this tenant's and not deleted. Any status: a layer or rule may be set up before the type is
 * published (as a workflow guard may name an unpublished rule).
 */
export async function assertTypeInTenant (db: Queryable, tenantId: string, id: string, field: string): Promise<void> {
  if (!(await sql.typeExists(db, tenantId, id))) throw validationError(field, `object type ${id} does not exist in this tenant`)
}

function mustFind (t: sql.TypeWithLatest | null, id: string): sql.TypeWithLatest {
  return t ?? notFound('object type', id)
}

/** Locks a type for a change of its definition, publish state or existence. */
async function lockForChange (tx: Tx, tenantId: string, id: string): Promise<sql.TypeWithLatest> {
  forgetPublished(id)
  return mustFind(await sql.findType(tx, tenantId, id, true), id)
}

function latestOf (t: sql.TypeWithLatest): versioning.Latest {
  return { id: t.id, version: t.latest_version, status: t.latest.status }
}

function audited (type: string, t: { id: string, key: string }, data: Record<string, unknown>) {
  return { audit: { type, resourceType: 'objectType', resourceId: t.id, data: { key: t.key, ...data } } }
}

export async function createObjectType (ctx: ServiceContext, body: unknown): Promise<ObjectTypeDto> {
  const input = parse<DefinitionInput & { key: string }>(schema.CreateObjectTypeBody, body)
  const def = mergeDefinition(null, input)
  checkDefinition(def)
  return runWrite(ctx, { resource: 'objectTypes', action: 'write', limit: 'object_type_count' }, async w => {
    await checkReferences(ctx, w.tx, def)
    const row = await sql.insertType(w.tx, ctx.tenantId, input.key)
    await sql.versions.insert(w.tx, ctx.tenantId, row.id, 1, def, ctx.actor.sub)
    w.record({ ...audited('objectType.created', row, { version: 1 }), counts: [{ counter: counters.OBJECT_TYPES, delta: 1 }] })
    return toObjectTypeDto(mustFind(await sql.findType(w.tx, ctx.tenantId, row.id), row.id))
  })
}

export async function getObjectType (ctx: ServiceContext, id: string): Promise<ObjectTypeDto> {
  await access.authorize(ctx, 'objectTypes', 'read')
  if (!isUuid(id)) notFound('object type', id)
  return toObjectTypeDto(mustFind(await sql.findType(ctx.db, ctx.tenantId, id), id))
}

/** Many object types by id in one statement (GraphQL's per-object `type` field); unknown ids are absent. */
export async function getObjectTypesByIds (ctx: ServiceContext, ids: readonly string[]): Promise<Map<string, ObjectTypeDto>> {
  await access.authorize(ctx, 'objectTypes', 'read')
  const rows = await sql.findTypes(ctx.db, ctx.tenantId, ids.filter(isUuid))
  return new Map(rows.map(t => [t.id, toObjectTypeDto(t)]))
}

export async function listObjectTypes (ctx: ServiceContext, q: { limit: number, offset: number, status?: string, key?: string }): Promise<Page<ObjectTypeDto>> {
  await access.authorize(ctx, 'objectTypes', 'read')
  const { rows, total } = await sql.listTypes(ctx.db, ctx.tenantId, q)
  return page(rows.map(toObjectTypeDto), q.limit, q.offset, total)
}

/** Edits the latest version in place while draft/sandbox; a published latest gets a new draft N+1. */
export async function patchObjectType (ctx: ServiceContext, id: string, body: unknown): Promise<ObjectTypeDto> {
  const input = parse<DefinitionInput>(schema.PatchObjectTypeBody, body)
  if (!isUuid(id)) notFound('object type', id)
  return runWrite(ctx, { resource: 'objectTypes', action: 'write' }, async w => {
    const t = await lockForChange(w.tx, ctx.tenantId, id)
    const def = mergeDefinition(t.latest.definition, input)
    checkDefinition(def)
    await checkReferences(ctx, w.tx, def)
    const version = await versioning.saveEdit(sql.versions, w.tx, ctx.tenantId, latestOf(t), def, ctx.actor.sub)
    w.record(audited('objectType.updated', t, { version, fields: Object.keys(input) }))
    return toObjectTypeDto(mustFind(await sql.findType(w.tx, ctx.tenantId, id), id))
  })
}

/** draft -> sandbox -> published; draft -> published passes sandbox and records both steps. */
export async function publishObjectType (ctx: ServiceContext, id: string, body: unknown): Promise<ObjectTypeDto> {
  const { to = 'published' } = parse<{ to?: 'sandbox' | 'published' }>(versioning.PublishBody, body ?? {})
  if (!isUuid(id)) notFound('object type', id)
  return runWrite(ctx, { resource: 'objectTypes', action: 'publish' }, async w => {
    const t = await lockForChange(w.tx, ctx.tenantId, id)
    const from = t.latest.status
    await versioning.advance(sql.versions, w.tx, ctx.tenantId, 'object type', latestOf(t), to)
    w.record(audited('objectType.published', t, { version: t.latest_version, from, to }))
    return toObjectTypeDto(mustFind(await sql.findType(w.tx, ctx.tenantId, id), id))
  })
}

export async function deleteObjectType (ctx: ServiceContext, id: string): Promise<void> {
  if (!isUuid(id)) notFound('object type', id)
  await runWrite(ctx, { resource: 'objectTypes', action: 'write' }, async w => {
    const t = await lockForChange(w.tx, ctx.tenantId, id)
    const live = await sql.countLiveObjects(w.tx, ctx.tenantId, id)
    if (live > 0) throw new AppError('CONFLICT', `object type ${t.key} still has ${live} live object(s); delete them first`, { liveObjects: live })
    await sql.softDeleteType(w.tx, ctx.tenantId, id)
    w.record({ ...audited('objectType.deleted', t, { version: t.latest_version }), counts: [{ counter: counters.OBJECT_TYPES, delta: -1 }] })
  })
}

/**
 * Dry run of object validation against any version (what sandbox is for). Writes nothing.
 * `document` is the body's JSON text: reading and checking it run in the evaluation pool
 * (evaluation.ts), against the latest version unless the body names another.
 */
export async function validateAgainstType (ctx: ServiceContext, id: string, document: string): Promise<{ valid: boolean, version: number, errors: Fault[] }> {
  await access.authorize(ctx, 'objectTypes', 'read')
  if (!isUuid(id)) notFound('object type', id)
  const t = mustFind(await sql.findType(ctx.db, ctx.tenantId, id), id)
  let v: VersionRow | null = t.latest
  let version = t.latest_version
  for (;;) {
    if (v === null) throw validationError('version', `object type has no version ${version}`)
    const verdict = await checkDocumentOffThread(ctx.config.evaluationThreads, { text: document, typeId: id, version, definition: v.definition, cacheKey: v.status === 'published' ? `${id}:${version}` : null })
    if (verdict.kind === 'refused') throw new AppError(verdict.error.code, verdict.error.message, verdict.error.details)
    if (verdict.kind === 'other version') {
      version = verdict.version
      v = await sql.versions.find(ctx.db, ctx.tenantId, id, version)
      continue
    }
    // PostGIS's validity check, as the write makes it, once the structural checks of the geometry pass.
    const definition = v.definition
    const refusal = verdict.geometry === null ? null : await withCallerCost(ctx, db => sql.geometryRefusal(db, verdict.geometry as string, definition.geometry))
    const errors = refusal === null ? verdict.faults : [...verdict.faults, refusal.details as unknown as Fault]
    return { valid: errors.length === 0, version, errors }
  }
}

export async function objectTypeRegistry (ctx: ServiceContext, id: string) {
  await access.authorize(ctx, 'objectTypes', 'read')
  if (!isUuid(id)) notFound('object type', id)
  mustFind(await sql.findType(ctx.db, ctx.tenantId, id), id)
  const versions = await sql.versions.list(ctx.db, ctx.tenantId, id)
  return { entityType: 'object-types', entityId: id, versions: versions.map(v => versioning.toRegistryVersion(v)) }
}
