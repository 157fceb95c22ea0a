import { setFlagsFromString } from 'node:v8'

// Imported first by every process entry (server, worker, the bench's HTTP floor), for its effect.
//
// A process that moves large bodies (a cold tile of 150 KB, a GeoJSON page, an NDJSON stream)
// allocates them outside V8's heap: every socket read is an ArrayBuffer. By default V8 keeps a
// separate limit for such external memory, 64 MB above what the last full collection left, and
// starts a full mark-compact each time the reads cross it, however little of the heap itself is
// garbage. For the API, whose live heap is about 50 MB, that was a full collection every second
// or two while serving cold z12 tiles (28 per 1,800 tiles), a third of its CPU. With external
// memory counted against the heap's own (global) limit, the same 1,800 tiles cost 2 full
// collections (README "Performance").
setFlagsFromString('--external-memory-accounted-in-global-limit')
