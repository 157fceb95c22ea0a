// The change feed (docs/behaviour.md "Change feed"): the tenant's object changes in commit order,
// read from its audit chain, as pages (GET /v1/changes) and live streams (the same path, SSE).
export * as schema from './schema.js'
export { listChanges, start, readPage, type ChangesQuery, type Start, type Page } from './feed.js'
export { ChangeHub, type HubOptions } from './hub.js'
export { encodeCursor, decodeCursor } from './cursor.js'
