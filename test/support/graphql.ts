import assert from 'node:assert/strict'
import type { Client, Response } from './harness.js'

// A GraphQL client over the test harness's HTTP client (POST /v1/graphql).

export interface GqlError { message: string, path?: string[], extensions: { code: string, status: number, details: Record<string, any> } }
export interface Gql { status: number, data: any, errors: GqlError[] | undefined, res: Response }

export async function gql (c: Client, query: string, variables: Record<string, unknown> = {}): Promise<Gql> {
  const res = await c.post('/v1/graphql', { query, variables })
  return { status: res.status, data: res.body?.data, errors: res.body?.errors, res }
}

/** The data of a query that must succeed. */
export async function ok (c: Client, query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const r = await gql(c, query, variables)
  assert.equal(r.status, 200, r.res.text)
  assert.equal(r.errors, undefined, r.res.text)
  return r.data
}

/** The single error of a query that must fail. */
export async function failure (c: Client, query: string, variables: Record<string, unknown> = {}): Promise<GqlError> {
  const r = await gql(c, query, variables)
  assert.ok(r.errors !== undefined && r.errors.length === 1, r.res.text)
  return r.errors[0]
}
