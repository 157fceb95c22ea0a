// The release this code is, and the one the database was migrated to (README).
export { recordRelease, recordedRelease } from './sql.js'
export { packageVersion } from './version.js'
