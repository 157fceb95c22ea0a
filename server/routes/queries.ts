import { JSON_TYPE, route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as queries from '../../lib/queries/index.js'
import { parseQuery } from '../../lib/validation.js'

const S = queries.schema

export const queryRoutes: RouteModule = () => {
  return [
    route({
      method: 'get', path: '/v1/queries/objects', operationId: 'queryObjects', heavy: 'request', tag: 'queries', auth: 'bearer', feature: 'queries',
      summary: 'Simple object query: typeId, status (workflowState), paging, one sort key',
      description: 'Needs objects:read. status filters workflowState; limit defaults to 100. For attribute, spatial and combined filters use POST /v1/queries/objects/run.',
      query: S.QueryObjectsQuery, responses: { 200: { description: 'a page of objects', schema: S.QueryResult } }, errors: [400],
      example: { summary: 'Poles in review', query: { typeId: '{typeId}', status: 'review', limit: 10 }, status: 200, after: ['transitionObject'] }
    }, async req => ({ bytes: await queries.queryObjectsJson(req.service, parseQuery<queries.ListParams>(S.QueryObjectsQuery, req.query)), type: JSON_TYPE })),

    route({
      method: 'post', path: '/v1/queries/objects/run', operationId: 'runObjectQuery', heavy: 'request', tag: 'queries', auth: 'bearer', feature: 'queries',
      summary: 'Run a query: filters (attribute, spatial, and/or/not), sorts, paging, aggregations, asOf, graph expansion',
      description: 'Needs objects:read. A bad field, operator or value is a 400 VALIDATION_ERROR whose details.field is the path, ' +
        'e.g. filters[0].filters[1].operator. Without graph the answer is {items, pagination, aggregations?}; with graph ' +
        '{objects, relations, truncated}.',
      body: S.RunQueryBody, bodyRequired: false,
      responses: { 200: { description: 'the results', schema: S.RunQueryResult } }, errors: [400],
      example: {
        summary: 'Poles of 10 m or more near Berlin, tallest first, with their average height',
        body: {
          filters: [{ field: 'attributes.height', operator: 'gte', value: 10 }, { field: 'geometry', operator: 'bbox', value: [13, 52, 14, 53] }],
          sorts: [{ field: 'attributes.height', order: 'desc' }],
          aggregations: [{ field: 'attributes.height', function: 'avg' }],
          limit: 10
        },
        status: 200, after: ['createObjects']
      }
    }, async req => ({ bytes: await queries.runQueryJson(req.service, req.body), type: JSON_TYPE })),
  ]
}
