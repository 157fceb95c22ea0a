export * as schema from './schema.js'
export {
  createRelation, patchRelation, deleteRelation, restoreRelation, getRelation, listRelations, listObjectRelations,
  parseListQuery, relationsOfObjects, otherEnd, otherEnds, type ListQuery, type ObjectRelationsQuery
} from './service.js'
export { toRelationDto, type RelationDto } from './dto.js'
export type { PerObjectFilter } from './sql.js'
