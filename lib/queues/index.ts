export * from './contracts.js'
export { createQueues } from './create.js'
export { depth, startedSince, type DepthRow, type StartRow } from './sql.js'
