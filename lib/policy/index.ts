// The tenant permission policy (CONTRACT "Authentication and roles"): README.
export * as schema from './schema.js'
export { permissionsFor, getPolicy, putPolicy } from './service.js'
