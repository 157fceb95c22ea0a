export * from './contracts.js'
export { depth, startedSince, type DepthRow, type StartRow } from './sql.js'
export { watchQueues } from './metrics.js'
