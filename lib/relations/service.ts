import { randomUUID } from 'node:crypto'
import type { ServiceContext } from '../context.js'
import { isUuid } from '../db.js'
import { AppError, notFound, validationError } from '../errors.js'
import { parse, parseQuery } from '../validation.js'
import { assertStorable } from '../storable.js'
import { page, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import { runWrite, type WriteScope } from '../pipeline.js'
import * as objects from '../objects/index.js'
import * as counters from '../counters/index.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import { toRelationDto, type RelationDto } from './dto.js'

interface CreateInput { fromObjectId: string, toObjectId: string, relationType: string, metadata?: Record<string, unknown>, inheritsGeometry?: boolean }
interface PatchInput { relationType?: string, metadata?: Record<string, unknown>, inheritsGeometry?: boolean }

/** Audit and outbox for one relation change, recorded by the pipeline in the same transaction. */
function record (w: WriteScope, audit: string, event: string, row: sql.RelationRow, extra: Record<string, unknown> = {}, live = 0): void {
  w.record({
    counts: live === 0 ? undefined : [{ counter: counters.RELATIONS, delta: live }],
    audit: { type: audit, resourceType: 'relation', resourceId: row.id, data: { fromObjectId: row.from_object_id, toObjectId: row.to_object_id, relationType: row.relation_type, ...extra } },
    event: { type: event, aggregateType: 'relation', aggregateId: row.id, payload: { relation: toRelationDto(row), ...extra } }
  })
}

function conflict (twinId: string): never {
  throw new AppError('CONFLICT', `an active relation with the same fromObjectId, toObjectId and relationType exists: ${twinId}`, { field: 'relationType', existingId: twinId })
}

/** Locks both ends; 400 naming the end that is not a live object of the tenant. */
async function requireEnds (ctx: ServiceContext, w: WriteScope, from: string, to: string): Promise<void> {
  const live = await objects.lockLiveObjects(w.tx, ctx.tenantId, [from, to])
  if (!live.has(from)) throw validationError('fromObjectId', `object ${from} does not exist in this tenant`)
  if (!live.has(to)) throw validationError('toObjectId', `object ${to} does not exist in this tenant`)
}

export async function createRelation (ctx: ServiceContext, body: unknown): Promise<RelationDto> {
  const input = parse<CreateInput>(schema.CreateRelationBody, body)
  assertStorable(input.relationType, 'relationType')
  assertStorable(input.metadata, 'metadata')
  if (input.fromObjectId === input.toObjectId) throw validationError('toObjectId', 'must differ from fromObjectId (no self-links)')
  return runWrite(ctx, { resource: 'relations', action: 'write', limit: 'relation_count' }, async w => {
    await requireEnds(ctx, w, input.fromObjectId, input.toObjectId)
    const row = await sql.insertRelation(w.tx, {
      id: randomUUID(), tenantId: ctx.tenantId, fromObjectId: input.fromObjectId, toObjectId: input.toObjectId,
      relationType: input.relationType, metadata: input.metadata ?? {}, inheritsGeometry: input.inheritsGeometry ?? false
    })
    if (row === null) conflict(await sql.findActiveTwin(w.tx, ctx.tenantId, input.fromObjectId, input.toObjectId, input.relationType, null) ?? 'unknown')
    record(w, 'relation.created', 'relation.created', row, {}, 1)
    return toRelationDto(row)
  })
}

async function lockActive (ctx: ServiceContext, w: WriteScope, id: string): Promise<sql.RelationRow> {
  const row = isUuid(id) ? await sql.lockRelation(w.tx, ctx.tenantId, id) : null
  if (row === null || row.deleted_at !== null) notFound('relation', id)
  return row
}

export async function patchRelation (ctx: ServiceContext, id: string, body: unknown): Promise<RelationDto> {
  const input = parse<PatchInput>(schema.PatchRelationBody, body)
  assertStorable(input.relationType, 'relationType')
  assertStorable(input.metadata, 'metadata')
  return runWrite(ctx, { resource: 'relations', action: 'write' }, async w => {
    const current = await lockActive(ctx, w, id)
    const next = {
      relationType: input.relationType ?? current.relation_type,
      metadata: (input.metadata === undefined ? current.metadata : objects.mergePatch(current.metadata, input.metadata)) as Record<string, unknown>,
      inheritsGeometry: input.inheritsGeometry ?? current.inherits_geometry
    }
    if (next.relationType !== current.relation_type) {
      const twin = await sql.findActiveTwin(w.tx, ctx.tenantId, current.from_object_id, current.to_object_id, next.relationType, current.id)
      if (twin !== null) conflict(twin)
    }
    const row = await sql.updateRelation(w.tx, ctx.tenantId, current.id, next)
    record(w, 'relation.updated', 'relation.updated', row, { fields: Object.keys(input) })
    return toRelationDto(row)
  })
}

export async function deleteRelation (ctx: ServiceContext, id: string): Promise<void> {
  await runWrite(ctx, { resource: 'relations', action: 'write' }, async w => {
    const current = await lockActive(ctx, w, id)
    record(w, 'relation.deleted', 'relation.deleted', await sql.setDeleted(w.tx, ctx.tenantId, current.id, true), {}, -1)
  })
}

/**
 * Restores a soft-deleted relation. Restoring an active one changes nothing (idempotent). 409 when
 * an identical link became active meanwhile, or when an end object is gone. The outbox gets
 * `relation.created` with `restored: true`: the domain events of docs/behaviour.md "Automation"
 * know no `relation.restored`, and for a consumer the link has (re)appeared.
 */
export async function restoreRelation (ctx: ServiceContext, id: string): Promise<RelationDto> {
  return runWrite(ctx, { resource: 'relations', action: 'write', limit: 'relation_count' }, async w => {
    const current = (isUuid(id) ? await sql.lockRelation(w.tx, ctx.tenantId, id) : null) ?? notFound('relation', id)
    if (current.deleted_at === null) return toRelationDto(current)
    const live = await objects.lockLiveObjects(w.tx, ctx.tenantId, [current.from_object_id, current.to_object_id])
    for (const [field, end] of [['fromObjectId', current.from_object_id], ['toObjectId', current.to_object_id]]) {
      if (!live.has(end)) throw new AppError('CONFLICT', `cannot restore: object ${end} no longer exists`, { field, objectId: end })
    }
    const twin = await sql.findActiveTwin(w.tx, ctx.tenantId, current.from_object_id, current.to_object_id, current.relation_type, current.id)
    if (twin !== null) conflict(twin)
    const row = await sql.setDeleted(w.tx, ctx.tenantId, current.id, false)
    record(w, 'relation.restored', 'relation.created', row, { restored: true }, 1)
    return toRelationDto(row)
  })
}

export async function getRelation (ctx: ServiceContext, id: string): Promise<RelationDto> {
  await access.authorize(ctx, 'relations', 'read')
  const row = (isUuid(id) ? await sql.findRelation(ctx.db, ctx.tenantId, id) : null) ?? notFound('relation', id)
  return toRelationDto(row)
}

export interface ListQuery {
  limit: number
  offset: number
  fromObjectId?: string
  toObjectId?: string
  relationType?: string
  includeDeleted: boolean
  metadata: Array<{ path: string[], value: string }>
}

const METADATA_PARAM = /^metadata\.(.+)$/

/**
 * Query string -> ListQuery. `metadata.<key>` parameters are taken out first (a key may be a
 * dotted path); the rest is validated against ListRelationsQuery.
 */
export function parseListQuery (query: Record<string, unknown>): ListQuery {
  const rest: Record<string, unknown> = {}
  const metadata: ListQuery['metadata'] = []
  for (const [k, raw] of Object.entries(query)) {
    const m = METADATA_PARAM.exec(k)
    if (!m) { rest[k] = raw; continue }
    const value = Array.isArray(raw) ? raw[raw.length - 1] : raw
    const path = m[1].split('.')
    if (path.length > 8 || path.some(p => p === '' || p.length > 128)) throw validationError(k, 'must be metadata.<key> with up to 8 dotted keys of 1 to 128 characters')
    if (typeof value !== 'string' || value.length > 4096) throw validationError(k, 'must be a value of at most 4096 characters')
    assertStorable([...path, value], k)
    metadata.push({ path, value })
  }
  if (metadata.length > schema.MAX_METADATA_FILTERS) throw validationError('metadata', `at most ${schema.MAX_METADATA_FILTERS} metadata filters`)
  const q = parseQuery<Omit<ListQuery, 'metadata'>>(schema.ListRelationsQuery, rest)
  assertStorable(q.relationType, 'relationType')
  return { ...q, metadata }
}

export async function listRelations (ctx: ServiceContext, q: ListQuery): Promise<Page<RelationDto>> {
  await access.authorize(ctx, 'relations', 'read')
  const { rows, total } = await sql.listRelations(ctx.db, ctx.tenantId, q)
  return page(rows.map(toRelationDto), q.limit, q.offset, total)
}

export interface ObjectRelationsQuery { limit: number, offset: number, direction: 'outgoing' | 'incoming' | 'all', relationType?: string, includeDeleted: boolean }

/** Relations of one live object (404 when it is not a live object of the tenant). */
export async function listObjectRelations (ctx: ServiceContext, objectId: string, q: ObjectRelationsQuery): Promise<Page<RelationDto>> {
  await access.authorize(ctx, 'relations', 'read')
  if (!isUuid(objectId) || !await objects.liveObjectExists(ctx.db, ctx.tenantId, objectId)) notFound('object', objectId)
  assertStorable(q.relationType, 'relationType')
  const { rows, total } = await sql.listRelations(ctx.db, ctx.tenantId, { ...q, objectId, metadata: [] })
  return page(rows.map(toRelationDto), q.limit, q.offset, total)
}

/**
 * Relations of many objects at once, grouped by object id (GraphQL's per-object `relations` and
 * `relatedObjects` fields batch through this: one statement for a whole page of objects).
 * Unlike listObjectRelations, an id that is not a live object simply has no relations.
 */
export async function relationsOfObjects (ctx: ServiceContext, objectIds: readonly string[], q: sql.PerObjectFilter): Promise<Map<string, RelationDto[]>> {
  await access.authorize(ctx, 'relations', 'read')
  assertStorable(q.relationType, 'relationType')
  const grouped = new Map<string, RelationDto[]>(objectIds.map(id => [id, []]))
  const rows = await sql.relationsOfObjects(ctx.db, ctx.tenantId, objectIds.filter(isUuid), q)
  for (const row of rows) grouped.get(row.for_object_id)?.push(toRelationDto(row))
  return grouped
}

/** The end of `relation` that is not `objectId` (for a link's other object). */
export function otherEnd (relation: RelationDto, objectId: string): string {
  return relation.fromObjectId === objectId ? relation.toObjectId : relation.fromObjectId
}

/**
 * The objects `relations` link `objectId` to, each once (two links, of two types or in both
 * directions, make one related object), in the order of its first link.
 */
export function otherEnds (relations: readonly RelationDto[], objectId: string): string[] {
  return [...new Set(relations.map(r => otherEnd(r, objectId)))]
}
