import type { RouteRegistrar } from '../app.js'

// relations routes: filled in by the relations capability.
export const registerRelationRoutes: RouteRegistrar = () => {}
