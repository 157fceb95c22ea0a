// The best raw SQL for each core path: the same rows written, the response JSON assembled by
// PostgreSQL and returned as text. The core bench runs these through pg (the raw side) and behind
// the minimal HTTP server of bench/floor-server.ts (the HTTP floor).

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', ${ISO})`
/** An object as the API shows it, built by PostgreSQL (list items add objectId). */
export const objectJson = (o: string, listItem = false) => `json_build_object('id', ${o}.id, 'typeId', ${o}.type_id, 'publicId', ${o}.public_id,
  'attributes', ${o}.attributes, 'geometry', ST_AsGeoJSON(${o}.geom)::json, 'workflowState', ${o}.workflow_state, 'version', ${o}.version,
  'validFrom', ${iso(`${o}.valid_from`)}, 'createdAt', ${iso(`${o}.created_at`)}, 'updatedAt', ${iso(`${o}.updated_at`)}${listItem ? `, 'objectId', ${o}.id` : ''})`

/** One statement writing what a create writes: object, first version, audit, outbox, counters. */
export const RAW_CREATE = `
  WITH o AS (
    INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, version, valid_from, created_at, updated_at)
    SELECT $1::uuid, $2, $3, 1, $1::text, $4::jsonb, ST_SetSRID(ST_GeomFromGeoJSON($5), 4326), 1, t, t, t
    FROM date_trunc('milliseconds', clock_timestamp()) t RETURNING *
  ), v AS (
    INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes, geom, created_at, updated_at, valid_from, tx_from, actor)
    SELECT id, 1, tenant_id, type_id, public_id, 'created', attributes, geom, created_at, updated_at, valid_from, created_at, $6::jsonb FROM o
  ), j AS (SELECT ${objectJson('o')} AS body FROM o
  ), a AS (
    INSERT INTO audit_events (tenant_id, type, actor, resource_type, resource_id, data, occurred_at)
    SELECT tenant_id, 'object.created', $6::jsonb, 'object', id::text, jsonb_build_object('typeId', type_id, 'publicId', public_id, 'version', 1), created_at FROM o
  ), e AS (
    INSERT INTO outbox_events (tenant_id, type, aggregate_type, aggregate_id, payload)
    SELECT o.tenant_id, 'object.created', 'object', o.id::text, jsonb_build_object('object', j.body) FROM o, j
  ), c AS (
    INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
    SELECT tenant_id, x.counter, type_id::text, 1 FROM o, (VALUES ('objects'), ('object_changes')) x(counter)
  )
  SELECT body::text FROM j`

/** One statement writing what a batch create of many objects writes (rows given as jsonb). */
export const RAW_BATCH = `
  WITH inp AS MATERIALIZED (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(n int, id uuid, attributes jsonb, geometry jsonb)),
  o AS (
    INSERT INTO objects (id, tenant_id, type_id, type_version, public_id, attributes, geom, version, valid_from, created_at, updated_at)
    SELECT inp.id, $2, $3, 1, inp.id::text, inp.attributes, ST_SetSRID(ST_GeomFromGeoJSON(inp.geometry::text), 4326), 1, t, t, t
    FROM inp, date_trunc('milliseconds', clock_timestamp()) t ORDER BY inp.n RETURNING *
  ), v AS (
    INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes, geom, created_at, updated_at, valid_from, tx_from, actor)
    SELECT id, 1, tenant_id, type_id, public_id, 'created', attributes, geom, created_at, updated_at, valid_from, created_at, $4::jsonb FROM o
  ), j AS (SELECT o.id, ${objectJson('o')} AS body FROM o
  ), a AS (
    INSERT INTO audit_events (tenant_id, type, actor, resource_type, resource_id, data, occurred_at)
    SELECT tenant_id, 'object.created', $4::jsonb, 'object', id::text, jsonb_build_object('typeId', type_id, 'publicId', public_id, 'version', 1), created_at FROM o
  ), e AS (
    INSERT INTO outbox_events (tenant_id, type, aggregate_type, aggregate_id, payload)
    SELECT o.tenant_id, 'object.created', 'object', o.id::text, jsonb_build_object('object', j.body::jsonb) FROM o JOIN j ON j.id = o.id
  ), c AS (
    INSERT INTO counter_deltas (tenant_id, counter, bucket, delta)
    SELECT $2, x.counter, $3, count(*) FROM o, (VALUES ('objects'), ('object_changes')) x(counter) GROUP BY x.counter
  )
  SELECT json_build_object('items', json_agg(j.body))::text AS body FROM j`

/**
 * One statement writing what an update of attributes writes ($1 id, $2 tenant, $3 the version the
 * client holds, $4 the attributes merged in, $5 actor): the current version closed, the object
 * changed, its next version, audit, outbox, the change counter; no row when the version moved.
 */
export const RAW_UPDATE = `
  WITH now AS MATERIALIZED (SELECT date_trunc('milliseconds', clock_timestamp()) AS t
  ), closed AS (
    UPDATE object_versions SET tx_to = now.t, valid_to = now.t FROM now WHERE tenant_id = $2 AND object_id = $1 AND version = $3
  ), o AS (
    UPDATE objects SET attributes = objects.attributes || $4::jsonb, version = version + 1, valid_from = now.t, updated_at = now.t
    FROM now WHERE tenant_id = $2 AND id = $1 AND version = $3 AND deleted_at IS NULL RETURNING objects.*
  ), v AS (
    INSERT INTO object_versions (object_id, version, tenant_id, type_id, public_id, operation, attributes, geom, created_at, updated_at, valid_from, tx_from, actor)
    SELECT id, version, tenant_id, type_id, public_id, 'updated', attributes, geom, created_at, updated_at, valid_from, updated_at, $5::jsonb FROM o
  ), j AS (SELECT ${objectJson('o')} AS body FROM o
  ), a AS (
    INSERT INTO audit_events (tenant_id, type, actor, resource_type, resource_id, data, occurred_at)
    SELECT tenant_id, 'object.updated', $5::jsonb, 'object', id::text, jsonb_build_object('typeId', type_id, 'publicId', public_id, 'version', version), updated_at FROM o
  ), e AS (
    INSERT INTO outbox_events (tenant_id, type, aggregate_type, aggregate_id, payload)
    SELECT o.tenant_id, 'object.updated', 'object', o.id::text, jsonb_build_object('object', j.body) FROM o, j
  ), c AS (
    INSERT INTO counter_deltas (tenant_id, counter, bucket, delta) SELECT tenant_id, 'object_changes', type_id::text, 1 FROM o
  )
  SELECT body::text FROM j`

export const RAW_GET = `SELECT ${objectJson('o')}::text AS body FROM objects o WHERE o.id = $1 AND o.tenant_id = $2 AND o.deleted_at IS NULL`

/** A page of 100 in created order (index scan) with the exact total from the counters. */
export const rawList = (dir: 'ASC' | 'DESC') => `
  SELECT json_build_object('items', coalesce((SELECT json_agg(${objectJson('p', true)}) FROM (
      SELECT * FROM objects WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at ${dir}, id ${dir} LIMIT 100) p), '[]'),
    'pagination', json_build_object('limit', 100, 'offset', 0, 'total', t.n, 'hasMore', t.n > 100))::text AS body
  FROM (SELECT coalesce(sum(delta), 0)::bigint AS n FROM counter_deltas WHERE tenant_id = $1 AND counter = 'objects') t`

/** A spatial page of up to 1,000 in created order with the exact count of the whole match. */
export const rawSpatial = (predicate: string) => `
  SELECT json_build_object('items', coalesce((SELECT json_agg(${objectJson('p', true)}) FROM (
      SELECT * FROM objects o WHERE o.tenant_id = $1 AND o.deleted_at IS NULL AND ${predicate} ORDER BY o.created_at, o.id LIMIT 1000) p), '[]'),
    'pagination', json_build_object('limit', 1000, 'offset', 0, 'total', t.n, 'hasMore', t.n > 1000))::text AS body
  FROM (SELECT count(*) AS n FROM objects o WHERE o.tenant_id = $1 AND o.deleted_at IS NULL AND ${predicate}) t`
// The box test as a careful hand would write it for any geometry: the index operator, then the
// exact test (the same two conjuncts the service compiles; ST_Intersects alone planned worse).
export const BBOX_SQL = '(o.geom && ST_MakeEnvelope($2::float8, $3::float8, $4::float8, $5::float8, 4326) AND ST_Intersects(o.geom, ST_MakeEnvelope($2::float8, $3::float8, $4::float8, $5::float8, 4326)))'
export const DWITHIN_SQL = 'ST_DWithin(o.geom::geography, ST_SetSRID(ST_MakePoint($2, $3), 4326)::geography, $4, false)'

// The same statement the service runs (lib/layers export-sql.ts), written out by hand, with the
// attributes read the cheapest way (the service also turns objects and arrays into JSON text).
// It runs as the service's does: a named prepared statement (planned once per connection) read
// in PostgreSQL's binary result format (lib/fenced/pg.ts), so both sides differ only by what the API
// adds: HTTP, the guards, the plan and cache key, the pool. The HTTP floor serves it too (`/b/tile`).
// `byType`: a layer of one type ($5); without, of all the tenant's objects (`/b/tile-all`).
const tileSql = (byType: boolean) => `
  WITH env AS MATERIALIZED (SELECT ST_TileEnvelope($1, $2, $3) AS m),
  box AS MATERIALIZED (SELECT env.m, ST_Expand(g, (ST_XMax(g) - ST_XMin(g)) * 64 / 4096.0) AS g FROM env, LATERAL (SELECT ST_Transform(env.m, 4326) AS g) l)
  SELECT ST_AsMVT(t, 'cold', 4096, 'geom') AS tile FROM (
    SELECT ST_AsMVTGeom(ST_Transform(o.geom, 3857), box.m, 4096, 64, true) AS geom, o.id::text AS id, o.type_id::text AS "typeId",
      o.public_id AS "publicId", o.workflow_state AS "workflowState",
      jsonb_strip_nulls(jsonb_build_object('attributes.name', o.attributes -> 'name', 'attributes.height', o.attributes -> 'height')) AS attrs
    FROM objects o, box WHERE o.tenant_id = $4 AND o.deleted_at IS NULL${byType ? ' AND o.type_id = $5' : ''} AND o.geom && box.g
  ) t WHERE t.geom IS NOT NULL`
export const TILE_SQL = tileSql(true)

/** The statements the HTTP floor serves, by the name its URL carries. */
export const FLOOR_STATEMENTS: Record<string, string> = {
  create: RAW_CREATE,
  update: RAW_UPDATE,
  batch: RAW_BATCH,
  get: RAW_GET,
  'list-asc': rawList('ASC'),
  'list-desc': rawList('DESC'),
  bbox: rawSpatial(BBOX_SQL),
  dwithin: rawSpatial(DWITHIN_SQL)
}

/** The statements the HTTP floor serves as bytes (a one-column bytea read in binary, lib/fenced/pg.ts), by name. */
export const FLOOR_BYTES_STATEMENTS: Record<string, string> = {
  tile: TILE_SQL,
  'tile-all': tileSql(false)
}
