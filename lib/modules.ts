// Wires the modules' cross-module hooks (object types may reference workflows; new objects take
// their workflow's initial state). Every entry point imports this once — server/app.ts,
// worker/main.ts, db/setup.ts — so no process can create objects with the hooks missing.
import './workflows/hooks.js'
// License: expiry and quotas on every write, query runs counted (lib/license README).
import './license/hooks.js'
// Layers: an object write drops the cached change counters the layer ETags derive from, in every process.
import './layers/changes.js'
