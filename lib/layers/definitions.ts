import { randomUUID } from 'node:crypto'
import type { ServiceContext } from '../context.js'
import { isUuid, runStatements } from '../db.js'
import { notFound } from '../errors.js'
import { parse, parseQuery } from '../validation.js'
import { assertStorable } from '../storable.js'
import { page, type Page } from '../schemas.js'
import * as access from '../access/index.js'
import { runWrite, type WriteScope } from '../pipeline.js'
import * as counters from '../counters/index.js'
import * as objectTypes from '../object-types/index.js'
import { changedStatement, TenantSettingsCache } from '../settings/index.js'
import * as schema from './schema.js'
import * as sql from './sql.js'
import { layerFilter, parseFields } from './selection.js'
import { toLayerDto, type LayerDto } from './dto.js'

// Layer definitions: create, list, read, PATCH, delete by id or slug (docs/behaviour.md "Layers and
// exports"), every write through the pipeline (audit, outbox, layer_count quota).

interface LayerInput {
  name?: string
  slug?: string
  description?: string | null
  definition?: sql.LayerDefinition
  cacheTtlSeconds?: number
}

/** Shape by ajv, then the filters through the query parser and the field names: 400 naming the path. */
function validateDefinition (def: sql.LayerDefinition | undefined): void {
  if (def === undefined) return
  assertStorable(def, 'definition')
  layerFilter(def)
  parseFields(def.fields ?? [], i => `definition.fields[${i}]`)
}

/** The type the filters name is this tenant's (inside the write: a refusal writes nothing). */
async function checkTypeReference (w: WriteScope, tenantId: string, def: sql.LayerDefinition | undefined): Promise<void> {
  const typeId = def?.filters?.typeId
  if (typeId !== undefined) await objectTypes.assertTypeInTenant(w.tx, tenantId, typeId, 'definition.filters.typeId')
}

const LIVE_DELTA = { created: 1, updated: 0, deleted: -1 } as const

// The exports read a layer on every request (a tile, a page): its row is kept per tenant and
// key (slug or id, as requested), unknown keys too (null), until a layer write of the tenant
// commits: its transaction NOTIFYs every process (lib/settings), and the writer drops its own
// entries right after COMMIT, so its next request already sees the change.
const layerCache = new TenantSettingsCache<sql.LayerRow | null>('layers')

/** Audit, outbox, the live-layer count (license layer_count) and the cache notice of one change. */
async function record (w: WriteScope, tenantId: string, type: 'created' | 'updated' | 'deleted', row: sql.LayerRow, dto: LayerDto): Promise<void> {
  await runStatements(w.tx, [changedStatement('layers', tenantId)])
  w.record({
    counts: [{ counter: counters.LAYERS, delta: LIVE_DELTA[type] }],
    audit: { type: `layer.${type}`, resourceType: 'layer', resourceId: row.id, data: { slug: row.slug, version: row.version } },
    event: { type: `layer.${type}`, aggregateType: 'layer', aggregateId: row.id, payload: { layer: dto } }
  })
}

export async function createLayer (ctx: ServiceContext, body: unknown): Promise<LayerDto> {
  const input = parse<Required<Pick<LayerInput, 'name' | 'slug'>> & LayerInput>(schema.CreateLayerBody, body)
  validateDefinition(input.definition)
  assertStorable(input.name, 'name')
  assertStorable(input.description, 'description')
  return runWrite(ctx, { resource: 'layers', action: 'write', limit: 'layer_count' }, async w => {
    await checkTypeReference(w, ctx.tenantId, input.definition)
    const row = await sql.insertLayer(w.tx, {
      tenant_id: ctx.tenantId, id: randomUUID(), slug: input.slug, name: input.name, description: input.description ?? null,
      definition: input.definition ?? {}, cache_ttl_seconds: input.cacheTtlSeconds ?? null
    })
    const dto = toLayerDto(row, ctx.config.layerCacheTtlSeconds)
    await record(w, ctx.tenantId, 'created', row, dto)
    return dto
  }).finally(() => layerCache.forget(ctx.db, ctx.tenantId))
}

/** By id or by slug, or 404. */
export async function findLayer (ctx: ServiceContext, key: string, db = ctx.db, lock = false): Promise<sql.LayerRow> {
  return (await sql.findLayer(db, ctx.tenantId, key, isUuid(key), lock)) ?? notFound('layer', key)
}

/** The same from this process's cache (the exports' read): the row is shared, never to be changed. */
export async function cachedLayer (ctx: ServiceContext, key: string): Promise<sql.LayerRow> {
  const row = await layerCache.get(ctx.db, ctx.tenantId, () => sql.findLayer(ctx.db, ctx.tenantId, key, isUuid(key)), key)
  return row ?? notFound('layer', key)
}

export async function getLayer (ctx: ServiceContext, key: string): Promise<LayerDto> {
  await access.authorize(ctx, 'layers', 'read')
  return toLayerDto(await findLayer(ctx, key), ctx.config.layerCacheTtlSeconds)
}

export async function listLayers (ctx: ServiceContext, query: Record<string, unknown>): Promise<Page<LayerDto>> {
  await access.authorize(ctx, 'layers', 'read')
  const q = parseQuery<{ limit: number, offset: number }>(schema.ListLayersQuery, query)
  const { rows, total } = await sql.listLayers(ctx.db, ctx.tenantId, q.limit, q.offset)
  return page(rows.map(r => toLayerDto(r, ctx.config.layerCacheTtlSeconds)), q.limit, q.offset, total)
}

export async function patchLayer (ctx: ServiceContext, key: string, body: unknown): Promise<LayerDto> {
  const input = parse<LayerInput>(schema.PatchLayerBody, body)
  validateDefinition(input.definition)
  assertStorable(input.name, 'name')
  assertStorable(input.description, 'description')
  return runWrite(ctx, { resource: 'layers', action: 'write' }, async w => {
    const current = await findLayer(ctx, key, w.tx, true)
    await checkTypeReference(w, ctx.tenantId, input.definition)
    const row = await sql.updateLayer(w.tx, ctx.tenantId, current.id, {
      slug: input.slug ?? current.slug,
      name: input.name ?? current.name,
      description: input.description === undefined ? current.description : input.description,
      definition: input.definition ?? current.definition,
      cache_ttl_seconds: input.cacheTtlSeconds ?? current.cache_ttl_seconds
    })
    const dto = toLayerDto(row, ctx.config.layerCacheTtlSeconds)
    await record(w, ctx.tenantId, 'updated', row, dto)
    return dto
  }).finally(() => layerCache.forget(ctx.db, ctx.tenantId))
}

export async function deleteLayer (ctx: ServiceContext, key: string): Promise<void> {
  await runWrite(ctx, { resource: 'layers', action: 'write' }, async w => {
    const current = await findLayer(ctx, key, w.tx, true)
    await sql.deleteLayer(w.tx, ctx.tenantId, current.id)
    await record(w, ctx.tenantId, 'deleted', current, toLayerDto(current, ctx.config.layerCacheTtlSeconds))
  }).finally(() => layerCache.forget(ctx.db, ctx.tenantId))
}
