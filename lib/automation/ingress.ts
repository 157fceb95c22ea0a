import { randomUUID } from 'node:crypto'
import { AppError } from '../errors.js'
import { assertStorable } from '../storable.js'
import * as sql from './sql.js'
import { readWebhookToken, tokenMatches } from './secrets.js'
import { queueRunAtOnce } from './trigger.js'
import { engineContext, type EngineDeps } from './context.js'

// POST /v1/automation/triggers/{slug}: authenticate by the rule's token, record a queued run and
// enqueue it, in one statement (trigger.ts queueRunAtOnce); nothing else happens in the request
// (the worker runs it). docs/behaviour.md "Automation": bad or missing
// token 401; the tenant's license switches automation off 403 FEATURE_DISABLED (checked once the
// token names the tenant, as a bearer route checks after authentication); no active or sandbox
// rule for the slug 404; else 202 {accepted: true, runIds}.
// A valid token of another rule is judged in the tenant the token names: when that tenant has a
// live rule with the slug, the token is a bad token for it (401, like any other); when it has
// none, 404. So a token never reveals another tenant's slugs, and the 404's message stays true.

export type IngressDeps = EngineDeps

function unauthorized (): never {
  throw new AppError('UNAUTHORIZED', 'a valid webhook token is required: Authorization: Bearer <webhookToken>', { reason: 'bad_webhook_token' })
}

/**
 * `idempotencyKey` (the caller's Idempotency-Key header, when sent) makes a retried POST find the
 * run of the first one instead of starting another.
 */
export async function acceptWebhook (deps: IngressDeps, slug: string, token: string | null, payload: unknown, idempotencyKey: string | null): Promise<{ accepted: true, runIds: string[] }> {
  // The payload is stored as the run's input: a value jsonb cannot hold exactly (deeper than
  // MAX_JSON_DEPTH, which overflowed the stack as a 500; a NUL; 1e400, stored as null) is a 400.
  assertStorable(payload, '')
  const claim = token === null ? null : readWebhookToken(token)
  if (claim === null) unauthorized()
  const rule = await sql.ruleForIngress(deps.db, claim.tenantId, claim.ruleId)
  // The same answer for an unknown rule and a wrong secret: a token reveals nothing by its shape.
  if (rule === null || !tokenMatches(token!, rule.token_hash)) unauthorized()
  const live = rule.status !== 'draft' && rule.live_slug === slug && rule.live_content !== null && rule.live_version !== null
  // Only a call whose rule is not live with the slug pays this read; the accepted call does not.
  if (!live && await sql.otherRuleIsLiveWithSlug(deps.db, claim.tenantId, slug, rule.id)) unauthorized()
  const ctx = engineContext(deps, claim.tenantId, idempotencyKey ?? randomUUID())
  await ctx.hooks.automationGate(ctx)
  if (!live) throw new AppError('NOT_FOUND', `no active or sandbox automation rule has the webhook slug "${slug}"`, { resource: 'automation trigger', id: slug })
  const requestId = idempotencyKey ?? randomUUID()
  const runId = await queueRunAtOnce(deps.db, claim.tenantId, deps.jobs, {
    ruleId: rule.id, ruleVersion: rule.live_version!, key: `webhook:${requestId}`, depth: 0, input: payload,
    trigger: { type: 'webhook', slug, requestId }
  })
  return { accepted: true, runIds: [runId] }
}
