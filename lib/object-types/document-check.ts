import os from 'node:os'
import bourne from '@hapi/bourne'
import { AppError, invalidJsonBody } from '../errors.js'
import { parse } from '../validation.js'
import type { Geometry } from '../geo/index.js'
import * as schema from './schema.js'
import { validateCandidate, warmValidators, type Fault, type TypeDefinition } from './definition.js'

// The dry run's evaluation, run in a thread of the evaluation pool (evaluation.ts): reading the
// request's JSON and checking it against a type version costs in proportion to the body (up to
// MAX_BODY_BYTES), and none of that may hold the API's event loop.

export interface DocumentCheck {
  /** The request body as it arrived (JSON text; empty for none). */
  text: string
  typeId: string
  /** The version `definition` is, and the one a body without `version` means. */
  version: number
  definition: TypeDefinition
  /** Set for published versions: the thread keeps their compiled validators. */
  cacheKey: string | null
}

export type DocumentVerdict =
  /** Checked: the faults, and the geometry as JSON text for PostGIS's own check (null when none or already faulty). */
  | { kind: 'checked', version: number, faults: Fault[], geometry: string | null }
  /** The body names another version: the caller looks it up and asks again with its definition. */
  | { kind: 'other version', version: number }
  /** The body itself is refused (not JSON, or not the shape the route declares). */
  | { kind: 'refused', error: { code: AppError['code'], message: string, details: Record<string, unknown> } }

// As the API's body parser reads JSON (co-body, strict): an object or an array, no prototype keys.
const STRICT_JSON = /^[\x20\x09\x0a\x0d]*[[{]/

function refused (err: AppError): DocumentVerdict {
  return { kind: 'refused', error: { code: err.code, message: err.message, details: err.details } }
}

export default function checkDocument (task: DocumentCheck): DocumentVerdict {
  settle()
  let body: unknown = {}
  if (task.text !== '') {
    try {
      if (!STRICT_JSON.test(task.text)) throw new SyntaxError('not an object or array')
      body = bourne.parse(task.text, { protoAction: 'error' })
    } catch {
      return refused(invalidJsonBody())
    }
  }
  let input: { attributes?: Record<string, unknown>, geometry?: Geometry | null, version?: number }
  try {
    input = parse(schema.ValidateBody, body)
  } catch (err) {
    if (err instanceof AppError) return refused(err)
    throw err
  }
  const version = input.version ?? task.version
  if (version !== task.version) return { kind: 'other version', version }
  const faults = validateCandidate(task.definition, { typeId: task.typeId, attributes: input.attributes ?? {}, geometry: input.geometry ?? null, workflowState: null }, task.cacheKey)
  const checked = input.geometry != null && !faults.some(f => f.field.startsWith('geometry'))
  return { kind: 'checked', version, faults, geometry: checked ? JSON.stringify(input.geometry) : null }
}

/** Nice value a thread takes once its code is loaded (Linux: per thread). */
const NICE = 10
let settled = false

/**
 * Compiles ajv's meta-schema, then lowers the thread's CPU priority: the loading ran at the
 * process's priority, so a thread on a busy machine is ready in about the time the process took
 * to load; the checks that follow yield to the API's thread and the database.
 */
function settle (): void {
  if (settled) return
  warmValidators()
  os.setPriority(NICE)
  settled = true
}

/** Run once as a thread starts (evaluation.ts `warmEvaluation`): its code is loaded and settled before the first dry run. */
export function warm (): true {
  settle()
  return true
}
