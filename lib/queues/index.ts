export * from './contracts.js'
export { createQueues } from './create.js'
export { depth, failedKept, startedSince, type DepthRow, type FailedRow, type StartRow } from './sql.js'
export { announceQueued, onQueued } from './wake.js'
