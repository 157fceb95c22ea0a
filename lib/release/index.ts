import type { Queryable } from '../db.js'

/**
 * The setup job records the release it migrated to; API and worker compare it with their own.
 * Re-recording an older version (a rollback) makes it the current one again.
 */
export async function recordRelease (db: Queryable, version: string): Promise<void> {
  await db.raw('INSERT INTO releases (version) VALUES (?) ON CONFLICT (version) DO UPDATE SET applied_at = now()', [version])
}

export async function recordedRelease (db: Queryable): Promise<string | null> {
  const row = await db('releases').orderBy('applied_at', 'desc').first('version')
  return row?.version ?? null
}
