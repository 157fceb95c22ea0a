// vt-pbf 3 ships no types; the one function lib/layers/mvt-js.ts uses.
declare module 'vt-pbf' {
  const vtpbf: {
    fromGeojsonVt (layers: Record<string, unknown>, options?: { version?: number, extent?: number }): Uint8Array
  }
  export default vtpbf
}
