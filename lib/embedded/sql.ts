import type { Db } from '../db.js'

/** true when ST_AsMVT can encode a one-point tile on this database. */
export async function probeMvt (db: Db): Promise<boolean> {
  try {
    await db.raw(`SELECT ST_AsMVT(t, 'probe', 4096, 'geom') AS tile
      FROM (SELECT ST_AsMVTGeom(ST_SetSRID(ST_MakePoint(0, 0), 3857), ST_TileEnvelope(0, 0, 0)) AS geom) t`)
    return true
  } catch {
    return false
  }
}
