// Structural GeoJSON checks shared by every module that accepts a geometry (README).
export { GEOMETRY_TYPES, validateGeometry, findElevation, findAntipodalEdge, type Geometry, type GeometryType, type GeoFault } from './geojson.js'
