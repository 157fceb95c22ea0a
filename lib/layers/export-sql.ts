import { escapeLiteral } from 'pg'
import { engineOf, preparedBytes, statementName, type Queryable } from '../db.js'
import * as objects from '../objects/index.js'
import * as queries from '../queries/index.js'
import { featureSql, mvtAttributesSql, mvtValueColumns, type FieldSelection } from './selection.js'
import { encodeTile } from './mvt-js.js'

// The export statements. PostgreSQL builds every answer (GeoJSON by json_build_object/json_agg,
// tiles by ST_AsMVT); JavaScript only frames them. All run over the object source `o`
// (lib/objects objectSource: the objects table now, the versions live at `asOf`), whose
// tenant filter the planner flattens into ours, so objects_tenant_geom_gist serves bbox and tiles.

const { sql, trusted, join } = queries
type Fragment = queries.Fragment

export interface Scope { tenantId: string, asOf?: string, where: Fragment }

function source (s: Scope): Fragment {
  const src = objects.objectSource([s.tenantId], s.asOf === undefined ? {} : { asOf: s.asOf })
  return trusted(src.sql, src.params)
}

function run (db: Queryable, f: Fragment) {
  return db.raw(f.text, f.params)
}

/** Stable page order: creation time, then id (objects_tenant_created serves it). */
const ORDER = trusted('o.created_at, o.id')

/**
 * A page of Features as the UTF-8 bytes of a JSON array, in the pieces they arrived in (lib/db
 * `preparedBytes`): a page of 10,000 Features is megabytes, and as text it cost the API's thread a
 * string of that size to decode and encode again, and its collector the garbage.
 */
export async function featurePage (db: Queryable, s: Scope, fields: FieldSelection, limit: number, offset: number): Promise<Buffer[]> {
  const f = sql`SELECT convert_to(coalesce(json_agg(p.f ORDER BY p.n), '[]'::json)::text, 'UTF8') AS features
    FROM (SELECT ${featureSql(fields)} AS f, row_number() OVER (ORDER BY ${ORDER}) AS n
      FROM ${source(s)} o WHERE ${s.where} ORDER BY ${ORDER} LIMIT ${limit} OFFSET ${offset}) p`
  return preparedBytes(db, statementName('geojson-page', f.text), f.text, f.params)
}

export async function countFeatures (db: Queryable, s: Scope): Promise<number> {
  const r = await run(db, sql`SELECT count(*)::int AS n FROM ${source(s)} o WHERE ${s.where}`)
  return r.rows[0].n
}

/** One Feature by object id, or null when the selection does not hold it. */
export async function featureById (db: Queryable, s: Scope, fields: FieldSelection, id: string): Promise<string | null> {
  const r = await run(db, sql`SELECT ${featureSql(fields)}::text AS f FROM ${source(s)} o WHERE o.id = ${id}::uuid AND ${s.where}`)
  return r.rows[0]?.f ?? null
}

/** One Feature's JSON text per row (column f), in no particular order. */
export function streamStatement (s: Scope, fields: FieldSelection): Fragment {
  return sql`SELECT ${featureSql(fields)}::text AS f FROM ${source(s)} o WHERE ${s.where}`
}

/** Every Feature's JSON text at once (where there are no cursors: embedded PGlite). */
export async function allFeatureLines (db: Queryable, s: Scope, fields: FieldSelection): Promise<string[]> {
  const r = await run(db, streamStatement(s, fields))
  return (r.rows as Array<{ f: string }>).map(row => row.f)
}

/** Ends a backend (an abandoned COPY), waiting up to 5 s for it to go. */
export async function terminateBackend (db: Queryable, pid: number): Promise<void> {
  await db.raw('SELECT pg_terminate_backend(?, 5000)', [pid])
}

/**
 * The NDJSON stream's statement: `COPY (one Feature's JSON text per row) TO STDOUT`, in no
 * particular order. COPY runs by the simple query protocol, which takes no bindings: each is
 * written into the text as a quoted literal (pg's escapeLiteral), which PostgreSQL types from
 * context exactly as it does an untyped binding.
 */
export function streamCopyStatement (s: Scope, fields: FieldSelection): string {
  const f = streamStatement(s, fields)
  let i = 0
  const text = f.text.replace(/\?/g, () => literal(f.params[i++]))
  if (i !== f.params.length) throw new Error('streamCopyStatement: bindings and placeholders differ')
  return `COPY (${text}) TO STDOUT`
}

function literal (v: unknown): string {
  if (v === null) return 'NULL'
  if (typeof v === 'string') return escapeLiteral(v)
  if (typeof v === 'number' || typeof v === 'boolean') return escapeLiteral(String(v))
  if (v instanceof Date) return escapeLiteral(v.toISOString())
  if (Array.isArray(v) && v.every(e => typeof e === 'string' || typeof e === 'number')) {
    return escapeLiteral(`{${v.map(e => `"${String(e).replace(/[\\"]/g, c => '\\' + c)}"`).join(',')}}`)
  }
  throw new Error(`streamCopyStatement: cannot write a ${typeof v} binding as a literal`)
}

export interface TileRequest { z: number, x: number, y: number, layerName: string }

/**
 * One Mapbox Vector Tile (extent 4096, buffer 64), in the pieces it arrived in (lib/db
 * `preparedBytes`: views of the socket's reads, not copied; `joinBytes` makes one buffer).
 * Candidates come from the tenant's GiST index by the tile's lon/lat box widened by the buffer;
 * ST_AsMVTGeom clips and quantizes in 3857. Properties: id, typeId, publicId, workflowState and
 * the selected attributes (docs/behaviour.md "Layers and exports").
 *
 * One round trip, planned once per connection: a named prepared statement (its text depends
 * only on the layer's filter and field shapes, the values are bindings). Plans stay serial
 * (STACK.md: each parallel worker re-initialises PROJ) because the statement
 * calls set_config, which is PARALLEL UNSAFE: PostgreSQL then plans the whole statement without
 * parallel workers (and the setting, local to the statement's own transaction, says so too).
 */
export async function renderTile (db: Queryable, s: Scope, fields: FieldSelection, t: TileRequest): Promise<Buffer[]> {
  if (!engineOf(db).mvt) return [encodeTile(await tileFeatures(db, s, fields, t), t)]
  const st = tileStatement(s, fields)
  return preparedBytes(db, st.name, st.text, [t.z, t.x, t.y, t.layerName, ...st.attrs, ...source(s).params, ...s.where.params])
}

// The tile statement's text, name and attribute bindings depend only on the selection's shape
// (its WHERE fragment, its fields, whether it reads `asOf`), which a cached layer row keeps as
// the same objects (exports.ts `compiled`): a cold tile builds its SQL text and names it once
// per shape, not once per request. The bindings that vary (z/x/y, layer name, tenant, asOf,
// the filter's values) are put in their places by renderTile, in the text's order.
interface TileStatement { text: string, name: string, attrs: queries.Fragment['params'] }
const tileStatements = new WeakMap<Fragment, WeakMap<FieldSelection, { now?: TileStatement, asOf?: TileStatement }>>()

function tileStatement (s: Scope, fields: FieldSelection): TileStatement {
  let byFields = tileStatements.get(s.where)
  if (byFields === undefined) tileStatements.set(s.where, byFields = new WeakMap())
  let byTime = byFields.get(fields)
  if (byTime === undefined) byFields.set(fields, byTime = {})
  const slot = s.asOf === undefined ? 'now' : 'asOf'
  let st = byTime[slot]
  if (st === undefined) {
    const f = sql`
    ${tileBox({ z: 0, x: 0, y: 0, layerName: '' })}
    SELECT ST_AsMVT(t, ${''}, 4096, 'geom') AS tile FROM (
      SELECT s.geom, s.id, s."typeId", s."publicId", s."workflowState", ${mvtAttributesSql(fields, 's')} AS attrs
      FROM (${tileRows(s, fields, trusted('ST_AsMVTGeom(ST_Transform(o.geom, 3857), box.m, 4096, 64, true) AS geom'))}) s
      WHERE s.geom IS NOT NULL
    ) t`
    // The bindings between the layer name and the source's: the attribute keys and paths.
    st = byTime[slot] = { text: f.text, name: statementName('layers.tile', f.text), attrs: f.params.slice(4, f.params.length - source(s).params.length - s.where.params.length) }
  }
  return st
}

/** The tile's 3857 envelope `m` and its lon/lat box `g` widened by the 64-pixel buffer. */
function tileBox (t: TileRequest): Fragment {
  return sql`WITH env AS MATERIALIZED (
      SELECT ST_TileEnvelope(${t.z}, ${t.x}, ${t.y}) AS m
    ),
    box AS MATERIALIZED (
      SELECT env.m, ST_Expand(g, (ST_XMax(g) - ST_XMin(g)) * 64 / 4096.0) AS g
      FROM env, LATERAL (SELECT ST_Transform(env.m, 4326) AS g) l
    )`
}

/**
 * Where ST_AsMVT is missing (embedded PGlite; lib/db Engine): the same candidates and properties
 * as renderTile's, as the text of a GeoJSON FeatureCollection, for mvt-js.ts to encode. Null
 * properties are left out, as ST_AsMVT leaves them out.
 */
export async function tileFeatures (db: Queryable, s: Scope, fields: FieldSelection, t: TileRequest): Promise<string> {
  const r = await run(db, sql`
    ${tileBox(t)}
    SELECT json_build_object('type', 'FeatureCollection', 'features', coalesce(json_agg(json_build_object(
        'type', 'Feature', 'geometry', s.geometry,
        'properties', jsonb_strip_nulls(jsonb_build_object('id', s.id, 'typeId', s."typeId",
          'publicId', s."publicId", 'workflowState', s."workflowState") || ${mvtAttributesSql(fields, 's')}))), '[]'::json))::text AS fc
    FROM (${tileRows(s, fields, trusted('ST_AsGeoJSON(o.geom)::json AS geometry'))}) s`)
  return r.rows[0].fc
}

/**
 * A tile's candidates with their properties' columns (selection.ts mvtValueColumns), `geometry`
 * first, as a subquery that is not flattened into its caller (OFFSET 0): each attribute value is
 * read once per object.
 */
function tileRows (s: Scope, fields: FieldSelection, geometry: Fragment): Fragment {
  const columns = join([geometry, trusted('o.id::text AS id, o.type_id::text AS "typeId", o.public_id AS "publicId", o.workflow_state AS "workflowState"'), ...mvtValueColumns(fields)], ', ')
  return sql`SELECT ${columns} FROM ${source(s)} o, box WHERE o.geom && box.g AND ${s.where} OFFSET 0`
}

export interface Extent { bbox: [number, number, number, number] | null, firstUpdate: string | null, lastUpdate: string | null }

/** The selection's lon/lat extent and the range of its updatedAt (OGC collection extent, TileJSON bounds). */
export async function extent (db: Queryable, s: Scope): Promise<Extent> {
  const r = await run(db, sql`SELECT ST_XMin(e) AS x1, ST_YMin(e) AS y1, ST_XMax(e) AS x2, ST_YMax(e) AS y2, t1, t2 FROM (
      SELECT ST_Extent(o.geom) AS e,
        to_char(min(o.updated_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t1,
        to_char(max(o.updated_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t2
      FROM ${source(s)} o WHERE ${s.where}) x`)
  const row = r.rows[0]
  return { bbox: row.x1 === null ? null : [row.x1, row.y1, row.x2, row.y2], firstUpdate: row.t1, lastUpdate: row.t2 }
}

/** Attribute names in the selection, with whether every value is a number (TileJSON fields). */
export async function attributeKinds (db: Queryable, s: Scope, max = 200): Promise<Array<{ key: string, numeric: boolean }>> {
  const r = await run(db, sql`SELECT a.key, bool_and(jsonb_typeof(a.value) = 'number') AS numeric
    FROM ${source(s)} o, jsonb_each(o.attributes) a WHERE ${s.where} GROUP BY a.key ORDER BY a.key LIMIT ${max}`)
  return r.rows
}
