import { common, type GraphqlModule } from './common.js'
import { platformModule } from './platform.js'
import { objectsModule } from './objects.js'
import { objectTypesModule } from './object-types.js'
import { workflowsModule } from './workflows.js'
import { rulesModule } from './rules.js'
import { relationsModule } from './relations.js'
import { queriesModule } from './queries.js'
import { auditModule } from './audit.js'
import { layersModule } from './layers.js'
import { automationModule } from './automation.js'
import { administrationModule } from './administration.js'

/**
 * Every module of the GraphQL schema, one file each (like ROUTE_MODULES for REST). A new module
 * (layers, automation, license) adds its file and one entry here; its SDL uses
 * `extend type Query` / `extend type Mutation`.
 */
export const GRAPHQL_MODULES: GraphqlModule[] = [
  common,
  platformModule,
  objectsModule,
  objectTypesModule,
  workflowsModule,
  rulesModule,
  relationsModule,
  queriesModule,
  auditModule,
  layersModule,
  automationModule,
  administrationModule
]
