import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { GraphQLError } from 'graphql'
import { formatError } from '../../server/graphql/errors.js'
import { AppError } from '../../lib/errors.js'

// What a resolver error looks like to Apollo's formatError: the formatted error and the original,
// wrapped in a GraphQLError whose originalError is what the resolver threw.
function fromResolver (thrown: unknown) {
  const wrapped = new GraphQLError(thrown instanceof Error ? thrown.message : String(thrown), { path: ['object'], originalError: thrown as Error })
  return formatError(wrapped.toJSON(), wrapped)
}

describe('GraphQL formatError', () => {
  it('gives an AppError its REST code, HTTP status and details', () => {
    const f = fromResolver(new AppError('VERSION_CONFLICT', 'object is at version 2, not 1', { currentVersion: 2 }))
    assert.deepEqual(f, { message: 'object is at version 2, not 1', path: ['object'], extensions: { code: 'VERSION_CONFLICT', status: 409, details: { currentVersion: 2 } } })
  })

  it('translates Postgres errors the way REST does (23505 -> CONFLICT)', () => {
    const pgError = Object.assign(new Error('duplicate key value violates unique constraint "x"'), { code: '23505', constraint: 'x' })
    const f = fromResolver(pgError)
    assert.equal(f.extensions?.code, 'CONFLICT')
    assert.equal(f.extensions?.status, 409)
    assert.doesNotMatch(f.message, /duplicate key/)
  })

  it('turns anything unexpected into INTERNAL_ERROR with a fixed message: no SQL, no stack', () => {
    const f = fromResolver(Object.assign(new Error('select secret from vault where 1/0'), { code: '22012' }))
    assert.deepEqual(f, { message: 'internal server error', path: ['object'], extensions: { code: 'INTERNAL_ERROR', status: 500, details: {} } })
    assert.doesNotMatch(JSON.stringify(f), /vault|stack/)
  })

  it('maps Apollo\'s request errors (parse, validation, variables) to BAD_REQUEST', () => {
    for (const code of ['GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED', 'BAD_USER_INPUT']) {
      const e = new GraphQLError('Cannot query field "nope" on type "Query".', { extensions: { code } })
      assert.deepEqual(formatError(e.toJSON(), e).extensions, { code: 'BAD_REQUEST', status: 400, details: {} })
    }
  })
})
