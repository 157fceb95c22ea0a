import type { LayerRow } from './sql.js'

export function toLayerDto (r: LayerRow, defaultTtl: number) {
  return {
    id: r.id,
    name: r.name,
    slug: r.slug,
    description: r.description,
    definition: r.definition,
    cacheTtlSeconds: r.cache_ttl_seconds ?? defaultTtl,
    version: r.version,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString()
  }
}

export type LayerDto = ReturnType<typeof toLayerDto>
