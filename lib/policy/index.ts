// The tenant permission policy (docs/behaviour.md "Authentication and roles"): README.
export * as schema from './schema.js'
export { permissionsFor, getPolicy, putPolicy } from './service.js'
