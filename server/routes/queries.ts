import type { RouteRegistrar } from '../app.js'

// queries routes: filled in by the queries capability.
export const registerQueryRoutes: RouteRegistrar = () => {}
