import { createHash } from 'node:crypto'
import { validationError } from '../errors.js'

// A cursor is a position in the tenant's audit chain: the sequence of the last event a reader
// has seen (README "Cursors"). Opaque to clients: base64url of `c1.<tag>.<sequence>`, the tag
// naming the tenant, so a cursor of another tenant is refused rather than read as a position in
// this one. The same text is built by PostgreSQL for each change (sql.ts cursorSql).

const VERSION = 'c1'

/** 8 hex digits of sha256(tenant): tells a foreign cursor from one's own, not a secret. */
export function tenantTag (tenantId: string): string {
  return createHash('sha256').update(tenantId).digest('hex').slice(0, 8)
}

/** The prefix that sql.ts cursorSql completes with the sequence. */
export const cursorPrefix = (tenantId: string): string => `${VERSION}.${tenantTag(tenantId)}.`

export function encodeCursor (tenantId: string, sequence: number): string {
  return Buffer.from(cursorPrefix(tenantId) + String(sequence)).toString('base64url')
}

const RESTART = 'restart without since (from the beginning of the feed) or with since=now (from the current end)'

/** A cursor -> its sequence; a malformed or foreign one is a 400 naming `field` and saying how to restart. */
export function decodeCursor (tenantId: string, cursor: string, field: string): number {
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('latin1') : ''
  const m = /^c1\.([0-9a-f]{8})\.(0|[1-9][0-9]{0,15})$/.exec(text)
  if (m === null || !Number.isSafeInteger(Number(m[2]))) throw badCursor(field, 'is not a cursor this feed gave out')
  if (m[1] !== tenantTag(tenantId)) throw badCursor(field, 'belongs to another tenant')
  return Number(m[2])
}

export function badCursor (field: string, why: string): Error {
  return validationError(field, `${why}; ${RESTART}`, { restart: ['since omitted', 'since=now'] })
}
