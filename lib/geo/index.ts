// Structural GeoJSON checks shared by every module that accepts a geometry (README).
export { GEOMETRY_TYPES, geometryPositions, validateGeometry, findElevation, findAntipodalEdge, type Geometry, type GeometryType, type GeoFault } from './geojson.js'
