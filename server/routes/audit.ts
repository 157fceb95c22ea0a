import type { RouteRegistrar } from '../app.js'

// Audit list and proof endpoints (lib/audit). Registered here so app.ts has one list of modules.
export const registerAuditRoutes: RouteRegistrar = () => {}
