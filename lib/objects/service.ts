import { randomUUID } from 'node:crypto'
import type { ServiceContext } from '../context.js'
import type { Bindings, Tx } from '../db.js'
import { isUuid } from '../db.js'
import { AppError, notFound, validationError } from '../errors.js'
import { parse } from '../validation.js'
import { assertStorable } from '../storable.js'
import { page, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import { runWrite, type WriteScope } from '../pipeline.js'
import * as objectTypes from '../object-types/index.js'
import type { Geometry } from '../geo/geojson.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import { mergePatch } from './merge-patch.js'
import { renderPublicId, usesSequence } from './public-id.js'
import { toHistoryItem, toListItem, toObjectDto, type ObjectDto } from './dto.js'

/** Workflows register how a new object gets its initial state; without them it is null. */
export const workflowHooks = {
  initialState: async (_ctx: ServiceContext, _tx: Tx, _workflowId: string): Promise<string | null> => null
}

interface CreateInput { typeId: string, attributes?: Record<string, unknown>, geometry?: Geometry | null, validFrom?: string }
interface PatchInput { attributes?: Record<string, unknown>, geometry?: Geometry | null, validFrom?: string }

type Published = objectTypes.Published

function assertValid (pub: Published, typeId: string, candidate: objectTypes.Candidate): void {
  const faults = objectTypes.validateCandidate(pub.definition, candidate, `${typeId}:${pub.version}`)
  if (faults.length > 0) {
    throw new AppError('VALIDATION_ERROR', `${faults[0].field} ${faults[0].reason}`, { ...faults[0], errors: faults })
  }
}

function actorOf (ctx: ServiceContext) {
  return { sub: ctx.actor.sub, roles: ctx.actor.roles }
}

/** History, audit and outbox for one object change: recorded by the pipeline in the same transaction. */
export function recordObjectChange (w: WriteScope, kind: 'created' | 'updated' | 'deleted' | 'transitioned', row: sql.ObjectRow, data: Record<string, unknown> = {}, previous?: sql.ObjectRow): void {
  const object = toObjectDto(row)
  w.record({
    audit: {
      type: kind === 'transitioned' ? 'workflow.transitioned' : `object.${kind}`,
      resourceType: 'object',
      resourceId: row.id,
      data: { typeId: row.type_id, publicId: row.public_id, version: row.version, ...data }
    },
    event: {
      type: `object.${kind}`,
      aggregateType: 'object',
      aggregateId: row.id,
      payload: { object, ...(previous ? { previous: toObjectDto(previous) } : {}), ...data }
    }
  })
}

// Longer ids could not be indexed (a btree entry holds about 2.7 kB) and are no use as identifiers.
const MAX_PUBLIC_ID = 256

/** The type's template rendered, or the id. `drawSeq` gives the next sequence number, once. */
async function makePublicId (p: { id: string, typeKey: string, template: string | null, attributes: Record<string, unknown> }, drawSeq: () => Promise<number>): Promise<string> {
  if (p.template === null) return p.id
  const seq = usesSequence(p.template) ? await drawSeq() : null
  const publicId = renderPublicId(p.template, { seq, now: new Date(), typeKey: p.typeKey, attributes: p.attributes })
  if (publicId === '') throw validationError('publicId', `the type's publicIdTemplate "${p.template}" renders an empty publicId for these attributes`)
  if (publicId.length > MAX_PUBLIC_ID) throw validationError('publicId', `the type's publicIdTemplate renders ${publicId.length} characters; at most ${MAX_PUBLIC_ID} are allowed`)
  return publicId
}

async function mustPublish (db: Tx, tenantId: string, typeId: string, fresh: boolean): Promise<Published> {
  const pub = await objectTypes.publishedType(db, tenantId, typeId, { fresh })
  if (pub === null) throw validationError('typeId', 'object type does not exist or has no published version')
  return pub
}

/**
 * Validates against the type's published definition (from the in-process cache) and inserts on
 * condition that the definition is still the published one; when it is not (a newer version was
 * published, or the type was deleted), the definition is read afresh and the create tried once more.
 */
export async function createObject (ctx: ServiceContext, body: unknown): Promise<ObjectDto> {
  const input = parse<CreateInput>(schema.CreateObjectBody, body)
  return runWrite(ctx, { resource: 'objects', action: 'write', limit: 'object_count' }, async w => {
    const id = randomUUID()
    const attributes = input.attributes ?? {}
    const geometry = input.geometry ?? null
    let seq: number | null = null // drawn at most once, so a retry leaves no gap in {{seq}}
    const drawSeq = async () => (seq ??= await sql.nextPublicIdSeq(w.tx, ctx.tenantId, input.typeId))
    const attempt = async (pub: Published): Promise<sql.ObjectRow | null> => {
      const def = pub.definition
      const workflowState = def.workflowId === null ? null : await workflowHooks.initialState(ctx, w.tx, def.workflowId)
      assertValid(pub, input.typeId, { typeId: input.typeId, attributes, geometry, workflowState })
      const publicId = await makePublicId({ id, typeKey: pub.key, template: def.publicIdTemplate, attributes }, drawSeq)
      return sql.insertObject(w.tx, {
        id, tenantId: ctx.tenantId, typeId: input.typeId, typeVersion: pub.version, publicId,
        attributes, geometry, workflowState, validFrom: input.validFrom ?? null, actor: actorOf(ctx)
      }).catch((err: { code?: string, constraint?: string }) => {
        if (err.code === '23505' && err.constraint === 'objects_tenant_public_id') {
          throw new AppError('CONFLICT', `publicId "${publicId}" is already taken in this tenant`, { field: 'publicId', publicId })
        }
        throw err
      })
    }
    let row = await attempt(await mustPublish(w.tx, ctx.tenantId, input.typeId, false))
    row ??= await attempt(await mustPublish(w.tx, ctx.tenantId, input.typeId, true))
    if (row === null) throw validationError('typeId', 'object type changed while the object was created; retry')
    recordObjectChange(w, 'created', row)
    return toObjectDto(row)
  })
}

/** Locks the live object and checks the caller's version; the start of every object change. */
export async function lockForChange (ctx: ServiceContext, tx: Tx, id: string, expectedVersion: number | null): Promise<sql.ObjectRow> {
  const current = (isUuid(id) ? await sql.lockObject(tx, ctx.tenantId, id) : null) ?? notFound('object', id)
  if (expectedVersion !== null && current.version !== expectedVersion) {
    throw new AppError('VERSION_CONFLICT', `object is at version ${current.version}, not ${expectedVersion}`, { currentVersion: current.version })
  }
  return current
}

/** RFC 7396 over the current attributes; the patch is checked first, as merging recurses through it. */
function mergeAttributes (current: Record<string, unknown>, patch: Record<string, unknown> | undefined): Record<string, unknown> {
  if (patch === undefined) return current
  assertStorable(patch, 'attributes')
  return mergePatch(current, patch) as Record<string, unknown>
}

export async function patchObject (ctx: ServiceContext, id: string, body: unknown, ifMatch: number): Promise<ObjectDto> {
  const input = parse<PatchInput>(schema.PatchObjectBody, body)
  return runWrite(ctx, { resource: 'objects', action: 'write' }, async w => {
    const current = await lockForChange(ctx, w.tx, id, ifMatch)
    if (input.validFrom !== undefined && new Date(input.validFrom) < current.valid_from) {
      throw validationError('validFrom', `must not be before the current version's validFrom ${current.valid_from.toISOString()}`)
    }
    const pub = await objectTypes.findPublished(w.tx, ctx.tenantId, current.type_id)
    if (pub === null) throw validationError('typeId', 'object type no longer has a published version')
    const attributes = mergeAttributes(current.attributes, input.attributes)
    const geometry = input.geometry === undefined ? current.geometry : input.geometry
    assertValid(pub, current.type_id, { typeId: current.type_id, attributes, geometry, workflowState: current.workflow_state })
    const row = await sql.writeVersion(w.tx, current, {
      operation: 'updated', attributes, geometry: input.geometry, workflowState: current.workflow_state,
      validFrom: input.validFrom ?? null, actor: actorOf(ctx)
    })
    recordObjectChange(w, 'updated', row, { fields: Object.keys(input) }, current)
    return toObjectDto(row)
  })
}

export async function deleteObject (ctx: ServiceContext, id: string, ifMatch: number | null): Promise<void> {
  await runWrite(ctx, { resource: 'objects', action: 'write' }, async w => {
    const current = await lockForChange(ctx, w.tx, id, ifMatch)
    const row = await sql.deleteObject(w.tx, current, actorOf(ctx))
    recordObjectChange(w, 'deleted', row)
  })
}

/** asOf reads transaction time, validAt valid time; one read answers one of the two questions. */
function assertOneTimeAxis (t: sql.TimePoint): void {
  if (t.asOf !== undefined && t.validAt !== undefined) throw validationError('validAt', 'use either asOf or validAt, not both')
}

export async function getObject (ctx: ServiceContext, id: string, t: sql.TimePoint): Promise<ObjectDto> {
  await access.authorize(ctx, 'objects', 'read')
  assertOneTimeAxis(t)
  const row = (isUuid(id) ? await sql.findObject(ctx.db, ctx.tenantId, id, t) : null) ?? notFound('object', id)
  return toObjectDto(row)
}

const SORT_COLUMNS: Record<string, string> = {
  id: 'o.id', publicId: 'o.public_id', typeId: 'o.type_id', workflowState: 'o.workflow_state', createdAt: 'o.created_at', updatedAt: 'o.updated_at'
}

/** sortBy -> SQL: a fixed column, or attributes.<path> as a bound jsonb path (never spliced). */
export function sortExpression (sortBy: string): { expr: string, params: Bindings } {
  const col = SORT_COLUMNS[sortBy]
  if (col !== undefined) return { expr: col, params: [] }
  const m = /^attributes\.(.+)$/.exec(sortBy)
  if (!m) throw validationError('sortBy', `cannot sort by "${sortBy}"`)
  return { expr: 'o.attributes #> ?::text[]', params: [m[1].split('.')] }
}

export interface ListQuery { limit: number, offset: number, typeId?: string, sortBy: string, sortOrder: 'asc' | 'desc', asOf?: string, validAt?: string }

export async function listObjects (ctx: ServiceContext, q: ListQuery): Promise<Page<ReturnType<typeof toListItem>>> {
  await access.authorize(ctx, 'objects', 'read')
  assertOneTimeAxis(q)
  const { rows, total } = await sql.listObjects(ctx.db, ctx.tenantId, { asOf: q.asOf, validAt: q.validAt }, {
    typeId: q.typeId, sort: sortExpression(q.sortBy), order: q.sortOrder, limit: q.limit, offset: q.offset
  })
  return page(rows.map(toListItem), q.limit, q.offset, total)
}

export async function objectHistory (ctx: ServiceContext, id: string, q: { limit: number, offset: number }) {
  await access.authorize(ctx, 'objects', 'read')
  if (!isUuid(id)) notFound('object', id)
  const { rows, total } = await sql.listVersions(ctx.db, ctx.tenantId, id, q.limit, q.offset)
  if (total === 0) notFound('object', id)
  return page(rows.map(toHistoryItem), q.limit, q.offset, total)
}

/**
 * Many live objects by id in one statement (GraphQL batches per-item object fields through this).
 * Ids that are not live objects of the tenant are absent from the map.
 */
export async function getObjectsByIds (ctx: ServiceContext, ids: readonly string[]): Promise<Map<string, ObjectDto>> {
  await access.authorize(ctx, 'objects', 'read')
  const rows = await sql.findLiveObjects(ctx.db, ctx.tenantId, ids.filter(isUuid))
  return new Map(rows.map(r => [r.id, toObjectDto(r)]))
}
