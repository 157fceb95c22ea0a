import type { RouteRegistrar } from '../app.js'

// workflows routes: filled in by the workflows capability.
export const registerWorkflowRoutes: RouteRegistrar = () => {}
