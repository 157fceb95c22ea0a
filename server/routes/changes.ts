import { JSON_TYPE, route, type RouteRequest } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as changes from '../../lib/changes/index.js'

const S = changes.schema

export const EVENT_STREAM = 'text/event-stream'

const wantsStream = (req: RouteRequest): boolean => req.header('Accept').includes(EVENT_STREAM)

export const changeRoutes: RouteModule = (deps) => {
  const hub = deps.changeHub
  return [
    route({
      method: 'get', path: '/v1/changes', operationId: 'listChanges', tag: 'changes', auth: 'bearer',
      summary: 'The tenant\'s object changes after a cursor, in commit order: a page, or with Accept: text/event-stream a live stream',
      description: 'Needs objects:read. Each change is created, updated, transitioned or deleted (a tombstone: id and version), with the object as of ' +
        'that change unless include=id. Filtered by typeId, bbox or a layer\'s filters, an object that moves into the selection appears as entered ' +
        'and one that moves out as left (without the object), so a copy of the selection stays exact. Resume with since=<nextCursor> (or a change\'s ' +
        'cursor): every later change is seen exactly once, whichever API process answers. A page may hold fewer than limit changes while hasMore ' +
        'is true (the feed reads a bounded stretch of the chain per page). With Accept: text/event-stream the same selection is streamed as ' +
        'Server-Sent Events as changes commit: `id: <cursor>`, `event: change`, `data: <one change>`; a `: heartbeat` comment every ' +
        'CHANGES_HEARTBEAT_SECONDS; resume with Last-Event-ID or since. A stream that falls CHANGES_STREAM_BUFFER_BYTES behind ends with ' +
        '`event: dropped` carrying the cursor to resume from. More than CHANGES_MAX_STREAMS_PER_TENANT open streams of a tenant on one server: 429.',
      query: S.ChangesQuery,
      headers: {
        Accept: { description: 'text/event-stream: a live stream instead of a page', required: false, schema: { type: 'string' } },
        'Last-Event-ID': { description: 'The stream resumes after this cursor (takes precedence over since)', required: false, schema: { type: 'string' } }
      },
      responses: {
        200: {
          description: 'a page of changes (application/json), or the live stream (text/event-stream)',
          schema: S.ChangePage,
          alternatives: { [EVENT_STREAM]: { type: 'string', description: 'Server-Sent Events: `id: <cursor>`, `event: change`, `data: <a change as JSON>`; `: heartbeat` comments; `event: dropped` before a slow consumer is cut' } }
        }
      },
      errors: [400, 404],
      example: { summary: 'The first changes of the tenant, ids and versions only', query: { limit: 10, include: 'id' }, status: 200, after: ['createObject'] }
    }, async req => {
      if (!wantsStream(req)) return { bytes: await changes.listChanges(req.service, req.query), type: JSON_TYPE }
      const position = req.header('Last-Event-ID')
      const { start } = await changes.start(req.service, req.query, position === '' ? undefined : position, true)
      const out = hub.open(req.service.tenantId, start)
      // A stream lasts: it gives back its tenant's request slot (its own limit is the streams').
      req.state.release?.()
      return { headers: { 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' }, bytes: out, type: `${EVENT_STREAM}; charset=utf-8` }
    })
  ]
}
