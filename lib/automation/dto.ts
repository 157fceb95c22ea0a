import type { RuleContent } from './definition.js'
import type { RuleWithContent, RunRow, VersionRow } from './sql.js'

export function toRuleDto (r: RuleWithContent) {
  const c = r.latest_content
  return {
    id: r.id,
    name: c.name,
    description: c.description ?? null,
    status: r.status,
    version: r.latest_version,
    liveVersion: r.live_version,
    trigger: c.trigger,
    ...(c.match !== undefined && c.match !== null ? { match: c.match } : {}),
    ...(c.condition !== undefined && c.condition !== null ? { condition: c.condition } : {}),
    effect: c.effect,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString()
  }
}

export type RuleDto = ReturnType<typeof toRuleDto> & { webhookToken?: string, signingSecret?: string }

export function toRegistryVersion (v: VersionRow) {
  return {
    version: v.version,
    status: v.status,
    definition: v.definition as RuleContent,
    createdAt: v.created_at.toISOString(),
    createdBy: v.created_by,
    sandboxAt: v.sandbox_at?.toISOString() ?? null,
    publishedAt: v.published_at?.toISOString() ?? null
  }
}

function durationMs (r: RunRow): number | null {
  return r.started_at !== null && r.finished_at !== null ? r.finished_at.getTime() - r.started_at.getTime() : null
}

export function toRunDto (r: RunRow) {
  return {
    id: r.id,
    ruleId: r.rule_id,
    ruleVersion: r.rule_version,
    status: r.status,
    trigger: r.trigger,
    matched: r.matched,
    conditionResult: r.condition_result,
    attempts: r.attempts,
    queuedAt: r.queued_at.toISOString(),
    startedAt: r.started_at?.toISOString() ?? null,
    finishedAt: r.finished_at?.toISOString() ?? null,
    durationMs: durationMs(r),
    error: r.error,
    replayOf: r.replay_of
  }
}

export function toRunDetail (r: RunRow) {
  return { ...toRunDto(r), input: r.input, steps: r.steps, request: r.request, response: r.response, attemptLog: r.attempt_log }
}

export type RunDto = ReturnType<typeof toRunDto>
