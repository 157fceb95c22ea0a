import type { Queryable } from '../db.js'

/** Records `version` as the current release; re-recording an older one (a rollback) makes it current again. */
export async function recordRelease (db: Queryable, version: string): Promise<void> {
  await db.raw('INSERT INTO releases (version) VALUES (?) ON CONFLICT (version) DO UPDATE SET applied_at = now()', [version])
}

/** The release recorded last, or null before the first. */
export async function recordedRelease (db: Queryable): Promise<string | null> {
  const row = await db('releases').orderBy('applied_at', 'desc').first('version')
  return row?.version ?? null
}
