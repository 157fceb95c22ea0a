export { depth, startedSince, type DepthRow, type StartRow } from './sql.js'
