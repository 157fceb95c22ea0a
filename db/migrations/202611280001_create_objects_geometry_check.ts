import type { Knex } from 'knex'

// The geometry an object write stores, checked by PostGIS in the write's own statement (no round
// trip of its own): ST_IsValidDetail, then either ST_MakeValid (the type's geometry.makeValid)
// or SQLSTATE PW002 with the reason and location as JSON in DETAIL (lib/db translatePgError
// makes it a 400). `n` is the item of a batch, echoed in DETAIL. `allowed` holds the GeoJSON
// types the object type allows (empty: any): a repair that changes the type (a crossing Polygon
// becomes a MultiPolygon) must still give one of them. PL/pgSQL, so raising needs no trick; the
// call costs a fraction of a microsecond beside parsing the GeoJSON.
// object_versions.geometry_repair: what the version's write repaired ({reason, location}), null
// when it repaired nothing; the history shows it (docs/behaviour.md "Objects").
const FUNCTION = `
  CREATE OR REPLACE FUNCTION objects_geometry (g jsonb, make_valid boolean, allowed text[], n integer, OUT geom geometry, OUT repair jsonb)
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
  DECLARE
    d valid_detail;
    fault jsonb;
  BEGIN
    IF g IS NULL THEN RETURN; END IF;
    geom := ST_SetSRID(ST_GeomFromGeoJSON(g::text), 4326);
    d := ST_IsValidDetail(geom);
    IF d.valid THEN RETURN; END IF;
    fault := jsonb_build_object('n', n, 'reason', d.reason,
      'location', CASE WHEN d.location IS NULL THEN NULL ELSE jsonb_build_array(ST_X(d.location), ST_Y(d.location)) END);
    IF NOT coalesce(make_valid, false) THEN
      RAISE EXCEPTION 'invalid geometry: %', d.reason USING ERRCODE = 'PW002', DETAIL = fault::text;
    END IF;
    geom := ST_MakeValid(geom, 'method=structure');
    repair := fault - 'n';
    IF ST_IsEmpty(geom) THEN
      RAISE EXCEPTION 'invalid geometry: %', d.reason USING ERRCODE = 'PW002',
        DETAIL = (fault || jsonb_build_object('repair', 'nothing is left once repaired'))::text;
    END IF;
    IF cardinality(allowed) > 0 AND NOT substr(ST_GeometryType(geom), 4) = ANY (allowed) THEN
      RAISE EXCEPTION 'invalid geometry: %', d.reason USING ERRCODE = 'PW002',
        DETAIL = (fault || jsonb_build_object('repair', 'repaired it is a ' || substr(ST_GeometryType(geom), 4) || ', which the object type does not allow'))::text;
    END IF;
  END
  $fn$`

export async function up (knex: Knex): Promise<void> {
  await knex.raw(FUNCTION)
  await knex.raw('ALTER TABLE object_versions ADD COLUMN IF NOT EXISTS geometry_repair jsonb')
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE object_versions DROP COLUMN IF EXISTS geometry_repair')
  await knex.raw('DROP FUNCTION IF EXISTS objects_geometry (jsonb, boolean, text[], integer)')
}
