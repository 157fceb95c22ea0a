import { randomUUID } from 'node:crypto'
import type { ServiceContext } from '../context.js'
import type { Queryable, Tx } from '../db.js'
import { constraintOf, INVALID_GEOMETRY, isUuid, translatePgError } from '../db.js'
import { AppError, notFound, validationError } from '../errors.js'
import { parse } from '../validation.js'
import { assertStorable } from '../storable.js'
import { page, pageJson, pagination, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import { runStatementWrite, runWrite, type FoldedStatement, type WriteScope } from '../pipeline.js'
import * as objectTypes from '../object-types/index.js'
import * as counters from '../counters/index.js'
import type { Geometry } from '../geo/index.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import { mergePatch } from './merge-patch.js'
import { renderPublicId, usesSequence } from './public-id.js'
import { toHistoryItem, toObjectDto, type ObjectDto } from './dto.js'

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

const LIVE_DELTA = { created: 1, updated: 0, transitioned: 0, deleted: -1 } as const

/** The audit event and counter deltas of one object change (they need no more than its ids). */
function changeRecord (kind: 'created' | 'updated' | 'deleted' | 'transitioned', r: { id: string, typeId: string, publicId: string, version: number }, data: Record<string, unknown>) {
  return {
    counts: [
      { counter: counters.OBJECTS, bucket: r.typeId, delta: LIVE_DELTA[kind] },
      { counter: counters.OBJECT_CHANGES, bucket: r.typeId, delta: 1 }
    ],
    audit: {
      type: kind === 'transitioned' ? 'workflow.transitioned' : `object.${kind}`,
      resourceType: 'object',
      resourceId: r.id,
      data: { typeId: r.typeId, publicId: r.publicId, version: r.version, ...data }
    }
  }
}

/**
 * Audit, outbox and counters for one object change (its history version is written by the
 * change's own statement): recorded by the pipeline in the same transaction.
 */
export function recordObjectChange (w: WriteScope, kind: 'created' | 'updated' | 'deleted' | 'transitioned', row: sql.ObjectRow, data: Record<string, unknown> = {}, previous?: sql.ObjectRow): void {
  const object = toObjectDto(row)
  w.record({
    ...changeRecord(kind, object, data),
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

async function mustPublish (db: Queryable, tenantId: string, typeId: string, fresh: boolean): Promise<Published> {
  const pub = await objectTypes.publishedType(db, tenantId, typeId, { fresh })
  if (pub === null) throw validationError('typeId', 'object type does not exist or has no published version')
  return pub
}

/** A create refused because a type's published version changed since it was cached. */
const STALE_TYPE = new Error('stale published type')

/**
 * Validates against the type's published definition (from the in-process cache) and inserts on
 * condition that the definition is still the published one; when it is not (a newer version was
 * published, or the type was deleted), the write is rolled back and tried once more with the
 * definitions read afresh.
 */
export async function createObject (ctx: ServiceContext, body: unknown): Promise<ObjectDto> {
  const input = parse<CreateInput>(schema.CreateObjectBody, body)
  return (await retryOnStaleType(fresh => createMany(ctx, [input], fresh, '')))[0]
}

/**
 * POST /v1/objects/batch: up to 1,000 objects in one transaction and one statement, all or
 * nothing; each has its own audit event, outbox event and counter deltas, and counts one against
 * the object_count limit (WriteSpec.units). A refused item names its index in the 400's
 * details.field (`items[17].attributes.height`) and details.index.
 */
export async function createObjects (ctx: ServiceContext, body: unknown): Promise<{ items: ObjectDto[] }> {
  const input = parse<{ items: CreateInput[] }>(schema.CreateObjectsBody, body)
  return { items: await retryOnStaleType(fresh => createMany(ctx, input.items, fresh, 'items')) }
}

async function retryOnStaleType<T> (write: (fresh: boolean) => Promise<T>): Promise<T> {
  try {
    return await write(false)
  } catch (err) {
    if (err !== STALE_TYPE) throw err
  }
  return write(true).catch(err => {
    throw err === STALE_TYPE ? validationError('typeId', 'object type changed while the object was created; retry') : err
  })
}

/**
 * One statement writes the objects, their first versions, audit and outbox events and counter
 * deltas. Without a sequence-drawing publicId template it is prepared from pool reads and runs
 * alone (lib/pipeline runStatementWrite: one round trip); with one, the sequence number is drawn
 * in the write's transaction, so a refused create uses none.
 */
async function createMany (ctx: ServiceContext, inputs: CreateInput[], fresh: boolean, listField: string): Promise<ObjectDto[]> {
  const spec = { resource: 'objects' as const, action: 'write' as const, limit: 'object_count', units: inputs.length }
  const statement = (items: sql.NewObjectChange[]): FoldedStatement => ({
    ...sql.insertObjectsStatement(ctx.tenantId, actorOf(ctx), items),
    onError: err => {
      if (err.code === '23505' && constraintOf(err) === 'objects_tenant_public_id') return publicIdTaken(items, listField, err.detail ?? '')
      return listField === '' || err.code !== INVALID_GEOMETRY ? err : invalidItemGeometry(err, listField)
    }
  })
  const rows = await runStatementWrite<ObjectDto>(ctx, spec,
    async () => {
      const items = await prepareAll(ctx, ctx.db, null, inputs, fresh, listField)
      return items === null ? null : statement(items)
    },
    async w => {
      const items = (await prepareAll(ctx, w.tx, w.tx, inputs, fresh, listField))!
      const written = await w.fold<ObjectDto>(statement(items))
      if (written.length !== items.length) throw STALE_TYPE // rolls back the sequence numbers drawn
      return written
    })
  // All or nothing (insertObjectsStatement): no row means a stale type and nothing written.
  if (rows.length !== inputs.length) throw STALE_TYPE
  return rows
}

/**
 * Every item validated, with its publicId; the workflow's initial state is read once per workflow.
 * Reads through `db`; `seqTx` draws sequence numbers; without it (null) an item whose template
 * draws one makes the answer null (the write then needs its transaction).
 */
async function prepareAll (ctx: ServiceContext, db: Queryable, seqTx: Tx | null, inputs: CreateInput[], fresh: boolean, listField: string): Promise<sql.NewObjectChange[] | null> {
  const initialStates = new Map<string, Promise<string | null>>()
  const items: sql.NewObjectChange[] = []
  for (const [i, input] of inputs.entries()) {
    const at = listField === '' ? null : { field: `${listField}[${i}]`, index: i }
    const item = await withItemPath(at, () => prepareCreate(ctx, db, seqTx, input, fresh, initialStates))
    if (item === null) return null
    items.push(item)
  }
  return items
}

/** Validation and publicId of one new object (null: its template needs `seqTx`, absent). */
async function prepareCreate (ctx: ServiceContext, db: Queryable, seqTx: Tx | null, input: CreateInput, fresh: boolean, initialStates: Map<string, Promise<string | null>>): Promise<sql.NewObjectChange | null> {
  const pub = await mustPublish(db, ctx.tenantId, input.typeId, fresh)
  const def = pub.definition
  if (seqTx === null && def.publicIdTemplate !== null && usesSequence(def.publicIdTemplate)) return null
  const attributes = input.attributes ?? {}
  const geometry = input.geometry ?? null
  const id = randomUUID()
  let workflowState: string | null = null
  if (def.workflowId !== null) {
    if (!initialStates.has(def.workflowId)) initialStates.set(def.workflowId, ctx.hooks.initialState(ctx, db, def.workflowId))
    workflowState = await initialStates.get(def.workflowId)!
  }
  assertValid(pub, input.typeId, { typeId: input.typeId, attributes, geometry, workflowState })
  const publicId = await makePublicId({ id, typeKey: pub.key, template: def.publicIdTemplate, attributes }, () => sql.nextPublicIdSeq(seqTx!, ctx.tenantId, input.typeId))
  const object = { id, typeId: input.typeId, typeVersion: pub.version, publicId, attributes, geometry, workflowState, validFrom: input.validFrom ?? null, geometryRules: def.geometry }
  return { object, ...changeRecord('created', { id, typeId: input.typeId, publicId, version: 1 }, {}) }
}

/** Re-throws an item's VALIDATION_ERROR with its path in the batch (`items[3].attributes.x`). */
async function withItemPath<T> (at: { field: string, index: number } | null, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (at === null || !(err instanceof AppError) || err.code !== 'VALIDATION_ERROR') throw err
    throw atItem(err, at)
  }
}

function atItem (err: AppError, at: { field: string, index: number }): AppError {
  const d = err.details as { field?: string, errors?: Array<{ field: string }> }
  const prefix = (f: string | undefined) => f === undefined || f === '' ? at.field : `${at.field}.${f}`
  return new AppError('VALIDATION_ERROR', `${prefix(d.field)}: ${err.message}`, {
    ...d, field: prefix(d.field), index: at.index, ...(d.errors ? { errors: d.errors.map(e => ({ ...e, field: prefix(e.field) })) } : {})
  })
}

/** A batch item's geometry PostGIS found invalid (objects_geometry names the item as `n`): the 400 names the item. */
function invalidItemGeometry (err: { detail?: string }, listField: string): AppError {
  const e = translatePgError(err) as AppError
  const n = Number((JSON.parse(err.detail ?? '{}') as { n?: number }).n)
  return atItem(e, { field: `${listField}[${n}]`, index: n })
}

/** 409 naming the publicId (and, in a batch, the item) that is already taken. */
function publicIdTaken (items: sql.NewObjectChange[], listField: string, detail: string): AppError {
  const i = items.findIndex(it => detail.includes(`, ${it.object.publicId})`))
  const publicId = i >= 0 ? items[i].object.publicId : null
  const field = listField !== '' && i >= 0 ? `${listField}[${i}].publicId` : 'publicId'
  return new AppError('CONFLICT', `publicId ${publicId === null ? '' : `"${publicId}" `}is already taken in this tenant`, { field, publicId, ...(listField !== '' && i >= 0 ? { index: i } : {}) })
}

/** Locks the live object and checks the caller's version; the start of every object change. */
export async function lockForChange (ctx: ServiceContext, tx: Tx, id: string, expectedVersion: number | null): Promise<sql.ObjectRow> {
  const current = (isUuid(id) ? await sql.lockObject(tx, ctx.tenantId, id) : null) ?? notFound('object', id)
  assertVersion(current, expectedVersion)
  return current
}

/** 409 VERSION_CONFLICT unless the caller's If-Match version (null: none given) is the current one. */
function assertVersion (current: sql.ObjectRow, expectedVersion: number | null): void {
  if (expectedVersion !== null && current.version !== expectedVersion) {
    throw new AppError('VERSION_CONFLICT', `object is at version ${current.version}, not ${expectedVersion}`, { currentVersion: current.version })
  }
}

/** RFC 7396 over the current attributes; the patch is checked first, as merging recurses through it. */
function mergeAttributes (current: Record<string, unknown>, patch: Record<string, unknown> | undefined): Record<string, unknown> {
  if (patch === undefined) return current
  assertStorable(patch, 'attributes')
  return mergePatch(current, patch) as Record<string, unknown>
}

/**
 * lockForChange for a patch: the object locked, and its type's published definition, checked
 * against the version the type publishes in the lock's statement (the cache is only used when
 * it holds that very version; published versions never change), so a patch costs one round trip
 * less than reading the definition apart.
 */
async function lockForPatch (ctx: ServiceContext, tx: Tx, id: string, expectedVersion: number | null): Promise<{ current: sql.ObjectRow, pub: objectTypes.Published | null }> {
  const locked = (isUuid(id) ? await sql.lockObjectWithType(tx, ctx.tenantId, id) : null) ?? notFound('object', id)
  const { type_published_version: published, ...current } = locked
  assertVersion(current, expectedVersion)
  if (published === null) return { current, pub: null }
  let pub = await objectTypes.publishedType(tx, ctx.tenantId, current.type_id)
  if (pub === null || pub.version !== published) pub = await objectTypes.publishedType(tx, ctx.tenantId, current.type_id, { fresh: true })
  return { current, pub }
}

export async function patchObject (ctx: ServiceContext, id: string, body: unknown, ifMatch: number | null): Promise<ObjectDto> {
  const input = parse<PatchInput>(schema.PatchObjectBody, body)
  return runWrite(ctx, { resource: 'objects', action: 'write' }, async w => {
    const { current, pub } = await lockForPatch(ctx, w.tx, id, ifMatch)
    if (input.validFrom !== undefined && new Date(input.validFrom) < current.valid_from) {
      throw validationError('validFrom', `must not be before the current version's validFrom ${current.valid_from.toISOString()}`)
    }
    if (pub === null) throw validationError('typeId', 'object type no longer has a published version')
    const attributes = mergeAttributes(current.attributes, input.attributes)
    const geometry = input.geometry === undefined ? current.geometry : input.geometry
    assertValid(pub, current.type_id, { typeId: current.type_id, attributes, geometry, workflowState: current.workflow_state })
    const row = await sql.writeVersion(w.tx, current, {
      operation: 'updated', attributes, geometry: input.geometry, workflowState: current.workflow_state,
      validFrom: input.validFrom ?? null, actor: actorOf(ctx), geometryRules: pub.definition.geometry
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
  return JSON.parse((await getObjectJson(ctx, id, t)).json)
}

/** The object as JSON text built by PostgreSQL (what GET /v1/objects/:id sends) and its version. */
export async function getObjectJson (ctx: ServiceContext, id: string, t: sql.TimePoint): Promise<{ json: string, version: number }> {
  await access.authorize(ctx, 'objects', 'read')
  assertOneTimeAxis(t)
  return (isUuid(id) ? await sql.findObjectJson(ctx.db, ctx.tenantId, id, t) : null) ?? notFound('object', id)
}

// The documented sort keys (docs/behaviour.md "Objects"). Each has an index serving both directions
// (migration 202611230201); NOT NULL columns get no NULLS LAST, which would defeat it. publicId is
// unique per tenant, so it needs no id tie-breaker.
const SORT_COLUMNS: Record<string, { expr: string, nullable: boolean, unique: boolean }> = {
  id: { expr: 'o.id', nullable: false, unique: true },
  publicId: { expr: 'o.public_id', nullable: false, unique: true },
  typeId: { expr: 'o.type_id', nullable: false, unique: false },
  workflowState: { expr: 'o.workflow_state', nullable: true, unique: false },
  createdAt: { expr: 'o.created_at', nullable: false, unique: false },
  updatedAt: { expr: 'o.updated_at', nullable: false, unique: false }
}

/** sortBy -> SQL: a fixed column, or attributes.<path> as a bound jsonb path (never spliced). */
export function sortExpression (sortBy: string): sql.SortKey {
  const col = SORT_COLUMNS[sortBy]
  if (col !== undefined) return { ...col, params: [] }
  const m = /^attributes\.(.+)$/.exec(sortBy)
  if (!m) throw validationError('sortBy', `cannot sort by "${sortBy}"`)
  return { expr: 'o.attributes #> ?::text[]', params: [m[1].split('.')], nullable: true, unique: false }
}

export interface ListQuery { limit: number, offset: number, typeId?: string, sortBy: string, sortOrder: 'asc' | 'desc', asOf?: string, validAt?: string }

/**
 * A page and its total. The current set's total is the exact counter the writes keep (all
 * objects, or one type); a time-travel read cannot use it (it counts now), so it counts up to
 * 10,000 and estimates above (docs/behaviour.md "Lists").
 */
export async function listObjects (ctx: ServiceContext, q: ListQuery): Promise<Page<ObjectDto & { objectId: string }>> {
  return JSON.parse(await listObjectsJson(ctx, q))
}

/** The list envelope as JSON text, its items built by PostgreSQL (what GET /v1/objects sends). */
export async function listObjectsJson (ctx: ServiceContext, q: ListQuery): Promise<string> {
  await access.authorize(ctx, 'objects', 'read')
  const t = { asOf: q.asOf, validAt: q.validAt }
  assertOneTimeAxis(t)
  // Now: the exact counter, read in the page's statement. Time travel: counted apart (bounded).
  if (q.asOf === undefined && q.validAt === undefined) {
    const counter = counters.totalStatement(ctx.tenantId, counters.OBJECTS, q.typeId === undefined ? null : [q.typeId])
    const p = await sql.listObjectsJson(ctx.db, ctx.tenantId, t, listFilter(q), counter)
    return pageJson(p.items, pagination(p.count, q.limit, q.offset, Number(p.total), { more: p.more }))
  }
  const [p, count] = await Promise.all([
    sql.listObjectsJson(ctx.db, ctx.tenantId, t, listFilter(q), null),
    sql.countObjects(ctx.db, ctx.tenantId, t, q.typeId)
  ])
  return pageJson(p.items, pagination(p.count, q.limit, q.offset, count.total, { exact: count.exact, more: p.more }))
}

function listFilter (q: ListQuery): sql.ListFilter {
  return { typeId: q.typeId, sort: sortExpression(q.sortBy), order: q.sortOrder, limit: q.limit, offset: q.offset }
}

/** The plan of a list page (diagnostics and tests; not an endpoint). */
export async function explainList (ctx: ServiceContext, q: ListQuery): Promise<string> {
  await access.authorize(ctx, 'objects', 'read')
  return sql.explainList(ctx.db, ctx.tenantId, { asOf: q.asOf, validAt: q.validAt }, listFilter(q))
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
