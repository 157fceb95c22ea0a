import type { RouteRegistrar } from '../app.js'

// rules routes: filled in by the rules capability.
export const registerRuleRoutes: RouteRegistrar = () => {}
