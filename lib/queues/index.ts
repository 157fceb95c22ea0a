export * from './contracts.js'
export { depth, startedSince, type DepthRow, type StartRow } from './sql.js'
