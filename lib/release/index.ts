import type { Queryable } from '../db.js'

/** The setup job records the release it migrated to; API and worker compare it with their own. */
export async function recordRelease (db: Queryable, version: string): Promise<void> {
  await db.raw('INSERT INTO releases (version) VALUES (?) ON CONFLICT (version) DO NOTHING', [version])
}

export async function recordedRelease (db: Queryable): Promise<string | null> {
  const row = await db('releases').orderBy('applied_at', 'desc').first('version')
  return row?.version ?? null
}
