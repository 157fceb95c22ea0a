import { CronExpressionParser } from 'cron-parser'
import { validationError } from '../errors.js'
import { checkLogic } from '../jsonlogic.js'
import { assertStorable } from '../storable.js'
import { parsePath, type MatchSpec } from './match.js'
import { findBadTemplate } from './templates.js'
import { BLOCKED_ADDRESS, isBlockedAddress, literalAddress } from './http.js'

// What one version of a rule holds, and the checks that parse() (JSON Schema) cannot express.
// Every fault is a VALIDATION_ERROR naming its path (e.g. `effect.retry.maxAttempts`).

export type Trigger =
  | { type: 'webhook', slug: string }
  | { type: 'object.event', events: string[], typeId?: string }
  | { type: 'schedule', cron: string, timezone?: string }

export interface WebhookEffect {
  type: 'webhook'
  url: string
  method?: string
  headers?: Record<string, string>
  body?: Record<string, unknown>
  retry?: { maxAttempts?: number, backoff?: 'exponential' }
}
export type Effect =
  | { type: 'workflow.transition', targetState: string, objectId?: string }
  | { type: 'object.update', objectId?: string, attributes: Record<string, unknown> }
  | WebhookEffect

export interface RuleContent {
  name: string
  description?: string | null
  trigger: Trigger
  match?: MatchSpec | MatchSpec[] | null
  condition?: unknown
  effect: Effect
}

export const DEFAULT_MAX_ATTEMPTS = 3

const ALLOWED: Record<string, string[]> = {
  webhook: ['type', 'slug'],
  'object.event': ['type', 'events', 'typeId'],
  schedule: ['type', 'cron', 'timezone'],
  'workflow.transition': ['type', 'targetState', 'objectId'],
  'object.update': ['type', 'objectId', 'attributes'],
  'webhook-effect': ['type', 'url', 'method', 'headers', 'body', 'retry']
}
const REQUIRED: Record<string, string[]> = {
  webhook: ['slug'], 'object.event': ['events'], schedule: ['cron'],
  'workflow.transition': ['targetState'], 'object.update': ['attributes'], 'webhook-effect': ['url']
}

function checkFields (value: Record<string, unknown>, kind: string, prefix: string): void {
  for (const k of Object.keys(value)) {
    if (!ALLOWED[kind].includes(k)) throw validationError(`${prefix}.${k}`, `is not a field of a ${value.type as string} ${prefix}`)
  }
  for (const k of REQUIRED[kind]) {
    if (value[k] === undefined) throw validationError(`${prefix}.${k}`, `is required for a ${value.type as string} ${prefix}`)
  }
}

function checkSchedule (t: { cron: string, timezone?: string }): void {
  if (t.timezone !== undefined) {
    try { new Intl.DateTimeFormat('en', { timeZone: t.timezone }) } catch { throw validationError('trigger.timezone', `unknown time zone "${t.timezone}"; use an IANA name such as Europe/Berlin`) }
  }
  // pg-boss 12 files each occurrence in a 60-second slot and looks every 30 s (timekeeper.js
  // OCCURRENCE_WINDOW_SECONDS), so a schedule fires at most once a minute: a 6-field cron (seconds
  // first) would silently fire far less often than it says, so it is refused.
  const fields = t.cron.trim().split(/\s+/).length
  if (fields === 6) throw validationError('trigger.cron', 'has 6 fields, but a schedule fires at most once a minute: give 5 fields (minute hour day month weekday), e.g. "* * * * *" for every minute')
  if (fields !== 5) throw validationError('trigger.cron', 'must have 5 fields (minute hour day month weekday); a schedule fires at most once a minute')
  try { CronExpressionParser.parse(t.cron, { tz: t.timezone ?? 'UTC' }) } catch (err) {
    throw validationError('trigger.cron', `is not a valid cron expression: ${(err as Error).message}`)
  }
}

function checkMatch (match: MatchSpec | MatchSpec[]): void {
  const list = Array.isArray(match) ? match : [match]
  for (const [i, m] of list.entries()) {
    const at = Array.isArray(match) ? `match[${i}]` : 'match'
    if (parsePath(m.path) === null) throw validationError(`${at}.path`, "must be a JSON path such as $.status, $.items[0].id or $['a b']")
    if (m.operator !== 'exists' && m.value === undefined) throw validationError(`${at}.value`, `is required for operator ${m.operator}`)
    if (m.operator === 'in' && !Array.isArray(m.value)) throw validationError(`${at}.value`, 'must be an array for operator in')
  }
}

function checkWebhookEffect (e: WebhookEffect, allowPrivate: boolean): void {
  let url: URL | null = null
  try { url = new URL(e.url.replace(/\{\{[^{}]*\}\}/g, 'x')) } catch { /* below */ }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw validationError('effect.url', 'must be an http:// or https:// URL (templates allowed in the path and query)')
  // A literal address never changes, so it is refused now; a name is judged at delivery (http.ts), as its DNS answer can change.
  const address = literalAddress(url.hostname)
  if (!allowPrivate && address !== null && isBlockedAddress(address)) throw validationError('effect.url', `names ${address}, ${BLOCKED_ADDRESS}`)
}

function checkTemplates (e: Effect): void {
  const bad = findBadTemplate(e, 'effect')
  if (bad) throw validationError(bad.path, bad.reason)
}

/**
 * Checks a rule version's content beyond its JSON Schema; throws VALIDATION_ERROR naming the path.
 * `allowPrivate`: WEBHOOK_ALLOW_PRIVATE_NETWORKS.
 */
export function checkRuleContent (c: RuleContent, allowPrivate: boolean): void {
  // First: the free-form parts (match.value, effect.attributes and body) are stored as JSON, and
  // the template walk below recurses through them; 5,000 levels of nesting overflowed the stack (a 500).
  assertStorable(c, '')
  const t = c.trigger as unknown as Record<string, unknown>
  checkFields(t, c.trigger.type, 'trigger')
  if (c.trigger.type === 'schedule') checkSchedule(c.trigger)
  if (c.match !== undefined && c.match !== null) checkMatch(c.match)
  if (c.condition !== undefined && c.condition !== null) {
    const fault = checkLogic(c.condition, 'condition')
    if (fault) throw validationError(fault.path, fault.reason)
  }
  const e = c.effect as unknown as Record<string, unknown>
  checkFields(e, c.effect.type === 'webhook' ? 'webhook-effect' : c.effect.type, 'effect')
  if (c.effect.type === 'webhook') checkWebhookEffect(c.effect, allowPrivate)
  checkTemplates(c.effect)
  // docs/behaviour.md "Automation": with a webhook trigger there is no triggering object, so a database effect names one.
  if (c.trigger.type !== 'object.event' && c.effect.type !== 'webhook' && c.effect.objectId === undefined) {
    throw validationError('effect.objectId', `is required when the trigger is ${c.trigger.type} (there is no triggering object); e.g. "{{payload.objectId}}"`)
  }
}

export function maxAttempts (e: WebhookEffect): number {
  return e.retry?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
}
