import type { RuleVersionRow, RuleWithLatest } from './sql.js'
import type { RuleKind } from './definition.js'
import * as versioning from '../versioning/index.js'

export function toRuleDto (r: RuleWithLatest) {
  return {
    id: r.id,
    key: r.key,
    name: r.latest_content.name,
    kind: r.kind,
    definition: r.latest_content.definition,
    version: r.latest_version,
    status: r.latest_status,
    publishedVersion: r.published_version,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString()
  }
}

export type RuleDto = ReturnType<typeof toRuleDto>

/** A schema-registry version: `definition` is the whole versioned content, with the rule's kind. */
export function toRegistryVersion (kind: RuleKind, v: RuleVersionRow) {
  return versioning.toRegistryVersion(v, d => ({ name: d.name, kind, definition: d.definition }))
}
